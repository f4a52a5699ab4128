import ArgumentParser
import Foundation

/// `sesame-bench`: measures sesamed beside a minimal C epoll server (the floor) and
/// a private dbus-daemon, interleaved in one run, and prints it (optionally writing BENCHMARKS.md).
@main
struct SesameBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sesame-bench",
        abstract: "Measure sesamed beside the floor and dbus-daemon."
    )

    @Option(help: "Rounds (each measures every row for every system).")
    var rounds = 3

    @Option(help: "Seconds of load per call measurement.")
    var seconds = 2.0

    @Flag(help: "Fewer, shorter rounds and at most 2,000 subscribers: a check that everything runs.")
    var quick = false

    @Option(help: "Where the temporary directories go (its file system is where sesamed's store is written).")
    var directory = "/var/tmp"

    @Option(help: "The sesamed to measure, with sesamectl beside it (default: those beside sesame-bench).")
    var sesamed: String?

    @Option(help: "The C one-shot client the CLI is measured against (scripts/lib/oneshot-client.c, built).")
    var cClient: String?

    @Option(help: "The floor server to run (default: bench-floor beside sesame-bench).")
    var floorServer: String?

    @Option(help: "The .deb built from the sesamed measured (scripts/package), for its sizes.")
    var package: String?

    @Option(help: "A Markdown table of sesamed's size by package (scripts/lib/size-by-package.py).")
    var sizesByPackage: String?

    @Option(help: "Write BENCHMARKS.md here, with the plot beside it.")
    var markdown: String?

    @Option(help: "The command shown in BENCHMARKS.md.")
    var command = "scripts/bench"

    func run() throws {
        let settings = makeSettings()
        let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().path
        let tools = Tools(
            binDirectory: binDirectory,
            sesamed: sesamed ?? binDirectory + "/sesamed",
            floor: floorServer ?? binDirectory + "/bench-floor"
        )
        let work = directory + "/sesame-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        Helpers.raiseOpenFileLimit()
        let (samples, sizes, dbusReply) = try measure(tools: tools, work: work, settings: settings)
        let report = Report(
            samples: samples,
            settings: settings,
            sizes: sizes,
            dbusReplyBytes: dbusReply,
            command: command,
            sizesByPackage: try sizesByPackage.map { try String(contentsOfFile: $0, encoding: .utf8) }
        )
        print(report.table)
        if let markdown {
            let plotName = "docs/benchmarks-broadcast.png"
            let plotPath = URL(fileURLWithPath: markdown).deletingLastPathComponent().path + "/" + plotName
            let plotted = report.plot(to: plotPath, workDirectory: work)
            if !plotted { FileHandle.standardError.write(Data("sesame-bench: no plot (gnuplot failed)\n".utf8)) }
            let previous = try? String(contentsOfFile: markdown, encoding: .utf8)
            try report.markdown(plot: plotted ? plotName : nil, previous: previous).write(
                toFile: markdown,
                atomically: true,
                encoding: .utf8
            )
        }
    }

    /// A second sesamed, its store holding 1,000 accounts, for the persisted change's row.
    private static func thousandAccounts(tools: Tools, work: String, messages: VarlinkMessages) throws
        -> PersistenceTarget
    {
        let many = SesameInstance(tools: tools, directory: work + "/sesame-1000")
        try many.prepare()
        try many.seed(accounts: 1000)
        let system = VarlinkSystem(
            .sesame,
            tools: tools,
            socket: many.socket,
            server: try many.start(),
            messages: messages,
            another: Launch(command: many.command, socket: many.socket)
        )
        return PersistenceTarget(
            accounts: 1000,
            system: system,
            trigger: SesameInstance.importMessage(subject: "subject-0", tokenLength: 1200),
            stateDirectory: many.stateDirectory
        )
    }

    /// The run's settings from the options.
    private func makeSettings() -> Settings {
        var settings = Settings()
        settings.rounds = rounds
        settings.seconds = seconds
        if quick {
            settings.rounds = min(rounds, 1)
            settings.seconds = min(seconds, 0.5)
            settings.subscriberCounts = [100, 500, 2000]
            settings.small = 500
            settings.large = 2000
            settings.events = 3
            settings.changes = 10
            settings.clientRuns = 5
        }
        return settings
    }

    /// Starts the three systems and the 1,000-account sesamed, runs every round, and stops them.
    private func measure(tools: Tools, work: String, settings: Settings) throws -> (Samples, MessageSizes, Int?) {
        let sesame = try SesameUnderTest.start(tools: tools, directory: work + "/sesame", replyBytes: 1114)
        var stoppable: [any MeasuredSystem] = [sesame.system]
        defer { stoppable.forEach { $0.stop() } }
        try FileManager.default.createDirectory(atPath: work + "/floor", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: work + "/dbus", withIntermediateDirectories: true)
        let floor = try VarlinkSystem.floor(
            tools: tools,
            directory: work + "/floor",
            sizes: sesame.sizes,
            messages: sesame.messages
        )
        stoppable.append(floor)
        let dbus = try DBusSystem(tools: tools, directory: work + "/dbus", sizes: sesame.sizes)
        stoppable.append(dbus)
        let many = try Self.thousandAccounts(tools: tools, work: work, messages: sesame.messages)
        stoppable.append(many.system)
        let persistence = [
            many,
            PersistenceTarget(
                accounts: 1,
                system: sesame.system,
                trigger: sesame.messages.trigger,
                stateDirectory: sesame.stateDirectory
            ),
        ]
        let clients = ClientRuns(
            tools: tools,
            socket: sesame.socket,
            account: sesame.account,
            getToken: sesame.messages.getToken,
            cClient: cClient,
            count: settings.clientRuns,
            work: work,
            package: package
        )
        try clients.prepareGitHelper()
        let runner = Runner(
            systems: [floor, dbus, sesame.system],
            persistence: persistence,
            clients: clients,
            settings: settings,
            work: work
        )
        try runner.run()
        let dbusReply = try dbus.calls(clients: 1, seconds: 0.1, fresh: false)?.number("reply_bytes")
        return (runner.samples, sesame.sizes, dbusReply.map { Int($0) })
    }
}
