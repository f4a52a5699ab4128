import Foundation

/// What a person and a script meet before any server work: a whole `sesamectl` process beside a
/// C client making the same call on the same sesamed, and each program's size as shipped.
struct ClientRuns {
    let tools: Tools
    /// The sesamed the clients call, and the id of its account.
    let socket: String
    let account: String
    /// GetToken for that account, as the C client sends it.
    let getToken: String
    /// The C one-shot client (scripts/lib/oneshot-client.c, built by the system's C compiler), if given.
    let cClient: String?
    /// Processes run per figure and round (their median is the round's value).
    let count: Int
    /// Where git's credential helper is linked (to sesamectl-commands, as installed) and git's
    /// request for it is kept, made by `prepareGitHelper`.
    let work: String
    /// The .deb built from these programs, if given.
    let package: String?

    private var gitHelper: String { work + "/git-credential-sesame" }
    private var gitRequest: String { work + "/git-request" }
    /// `get` as git runs the helper for a server configured with this account.
    private var gitGet: [String] { [gitHelper, "--account", account, "--socket", socket, "get"] }

    /// git-credential-sesame as scripts/install lays it out, a link named for the helper to
    /// sesamectl-commands, and the request git writes on its stdin for a server.
    func prepareGitHelper() throws {
        try? FileManager.default.removeItem(atPath: gitHelper)
        try FileManager.default.createSymbolicLink(
            atPath: gitHelper,
            withDestinationPath: tools.sesamectl + "-commands"
        )
        try Data("protocol=https\nhost=git.example.com\n\n".utf8).write(to: URL(fileURLWithPath: gitRequest))
        // The helper exits 0 whatever happened (git reads only what it prints): a run that found
        // no token would be timed as well as one that did, so the answer is checked once here.
        let helper = Process()
        helper.executableURL = URL(fileURLWithPath: gitGet[0])
        helper.arguments = Array(gitGet.dropFirst())
        helper.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: gitRequest))
        let answer = Pipe()
        helper.standardOutput = answer
        try helper.run()
        let printed = String(decoding: answer.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        helper.waitUntilExit()
        guard printed.split(separator: "\n").contains(where: { $0.hasPrefix("password=") }) else {
            throw BenchError("git-credential-sesame get gave git no token")
        }
    }

    /// `sesamectl token`, the C client's same GetToken (the floor column), `sesamectl --version`,
    /// and `git-credential-sesame get` answering git's request with the account's token.
    func measure(into samples: inout Samples, round: Int) throws {
        let token = try median(of: [tools.sesamectl, "token", account, "--socket", socket])
        let floor = try cClient.map { try median(of: [$0, socket, getToken]) }
        let version = try median(of: [tools.sesamectl, "--version"])
        let git = try median(of: gitGet, stdin: gitRequest)
        samples.record(.clientProcess(.token), .sesame, round: round, token)
        if let floor { samples.record(.clientProcess(.token), .floor, round: round, floor) }
        samples.record(.clientProcess(.version), .sesame, round: round, version)
        samples.record(.clientProcess(.gitCredential), .sesame, round: round, git)
        let line =
            String(
                format: "  sesamectl token: %.2f ms, --version: %.2f ms, git helper get: %.2f ms",
                token,
                version,
                git
            )
            + (floor.map { String(format: ", the C client: %.2f ms", $0) } ?? "")
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// The median wall time (ms) of `count` runs of `command`, each from spawn to exit, reading
    /// `stdin` when given.
    private func median(of command: [String], stdin: String? = nil) throws -> Double {
        let input = stdin.map { ["--stdin", $0] } ?? []
        let runs = try Helpers.run(tools.client, ["runs", "--count", "\(count)"] + input + ["--"] + command)
        guard let median = Samples.median(try runs.numbers("wall_us")) else {
            throw BenchError("no runs of \(command)")
        }
        return median / 1000
    }

    /// Each program's size once stripped, as scripts/package ships it: sesamed beside the floor
    /// server and dbus-daemon, sesamectl beside the C one-shot client and dbus-send (where installed).
    /// Sizes do not change between rounds: they are recorded once.
    func sizes(into samples: inout Samples, directory: String) throws {
        let programs: [(Program, SystemName, String)] =
            [
                (.daemon, .sesame, tools.sesamed), (.daemon, .floor, tools.floor), (.daemon, .dbus, tools.dbusDaemon),
                (.client, .sesame, tools.sesamectl), (.client, .dbus, "/usr/bin/dbus-send"),
                (.clientCommands, .sesame, tools.sesamectl + "-commands"),
            ] + (cClient.map { [(.client, .floor, $0)] } ?? [])
        for (program, system, path) in programs where FileManager.default.fileExists(atPath: path) {
            let stripped = directory + "/stripped-\(program)-\(system.rawValue)"
            let strip = Process()
            strip.executableURL = URL(fileURLWithPath: "/usr/bin/strip")
            strip.arguments = ["-o", stripped, path]
            try strip.run()
            strip.waitUntilExit()
            guard strip.terminationStatus == 0 else { throw BenchError("strip failed on \(path)") }
            let size = try FileManager.default.attributesOfItem(atPath: stripped)[.size] as? Int ?? 0
            samples.record(.strippedSize(program), system, round: 0, Double(size))
        }
        if let package {
            let size = try FileManager.default.attributesOfItem(atPath: package)[.size] as? Int ?? 0
            samples.record(.packageSize(.deb), .sesame, round: 0, Double(size))
            let field = try Helpers.run("/usr/bin/dpkg-deb", ["--field", package, "Installed-Size"]).text
            guard let kibibytes = Double(field.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw BenchError("no Installed-Size in \(package)")
            }
            samples.record(.packageSize(.installed), .sesame, round: 0, kibibytes * 1024)
        }
    }
}
