import Foundation

/// How much a run measures.
struct Settings {
    var rounds = 3
    var seconds = 2.0
    /// Subscriber counts the fan-out is measured at (and plotted); `small` and `large` are in the table.
    var subscriberCounts = [100, 1000, 3000, 10_000]
    var small = 1000
    var large = 10_000
    /// Events sent one at a time per fan-out (their median is the round's value), and the burst.
    var events = 5
    var burst = 10
    /// Persisted changes per round for the last row.
    var changes = 30
    /// Client processes run per figure and round.
    var clientRuns = 20
}

/// A sesamed whose persisted change is measured: how many accounts its store holds, the call
/// that makes the change, and where its store is (the disk floor writes a file of that size beside it).
struct PersistenceTarget {
    let accounts: Int
    let system: VarlinkSystem
    let trigger: String
    let stateDirectory: String
}

/// Runs every measurement, round after round, each row for every system before the next row, in
/// an order that rotates each round, so that whatever else the machine is doing falls on all three.
final class Runner {
    private let systems: [any MeasuredSystem]
    private let persistence: [PersistenceTarget]
    private let clients: ClientRuns
    private let settings: Settings
    /// Where stripped copies of the programs are made.
    private let work: String
    private(set) var samples = Samples()

    /// A runner for `systems`, for the persisted change of each of `persistence`, and for the
    /// client processes and program sizes of `clients`.
    init(
        systems: [any MeasuredSystem],
        persistence: [PersistenceTarget],
        clients: ClientRuns,
        settings: Settings,
        work: String
    ) {
        self.systems = systems
        self.persistence = persistence
        self.clients = clients
        self.settings = settings
        self.work = work
    }

    /// Warms every system up (a short load, one start-up) and then measures every round.
    func run() throws {
        log("warming up")
        for system in systems {
            _ = try system.calls(clients: 8, seconds: 0.3, fresh: false)
            _ = try system.startup()
        }
        try clients.sizes(into: &samples, directory: work)
        for round in 0..<settings.rounds {
            let order = (0..<systems.count).map { systems[($0 + round) % systems.count] }
            log("round \(round + 1) of \(settings.rounds)")
            for clients in [1, 8, 64] {
                for system in order { try calls(system, clients: clients, round: round) }
            }
            for clients in [1, 8] {
                for system in order { try connects(system, clients: clients, round: round) }
            }
            try clients.measure(into: &samples, round: round)
            // Before the fan-out, not right after its 10,000 subscribers' sockets were closed:
            // measured there, sesamed's start-up took 18-19 ms (13-26 ms by round), against
            // 12-15 ms on a quiet machine; measured here, 12.7-13.6 ms.
            for system in order { try startup(system, round: round) }
            for subscribers in settings.subscriberCounts {
                for system in order { try fanout(system, subscribers: subscribers, round: round) }
            }
            try persistedChanges(round: round)
        }
    }

    /// GetToken from `clients` persistent connections: CPU per call, and rate or p99 where a row wants them.
    private func calls(_ system: any MeasuredSystem, clients: Int, round: Int) throws {
        guard let result = try system.calls(clients: clients, seconds: settings.seconds, fresh: false) else { return }
        let calls = try result.number("calls")
        guard calls > 0 else { throw BenchError("\(system.name.title): no calls completed") }
        let cpu = try result.number("cpu_us_0") / calls
        samples.record(.serverCPU(clients: clients), system.name, round: round, cpu)
        if let service = result.values["cpu_us_1"].flatMap(Double.init) {
            samples.record(.serviceCPU(clients: clients), system.name, round: round, service / calls)
        }
        if clients == 8 { samples.record(.callRate, system.name, round: round, try result.number("rate")) }
        if clients == 1 { samples.record(.latencyP99, system.name, round: round, try result.number("p99_us")) }
        log(
            "  \(system.name.title), \(clients) clients: \(Int(try result.number("rate")))/s, "
                + String(format: "%.1f µs CPU/call, p99 %.0f µs", cpu, try result.number("p99_us"))
        )
    }

    /// Connect, one GetToken, close, from `clients` clients.
    private func connects(_ system: any MeasuredSystem, clients: Int, round: Int) throws {
        guard let result = try system.calls(clients: clients, seconds: settings.seconds, fresh: true) else { return }
        samples.record(.connectRate(clients: clients), system.name, round: round, try result.number("rate"))
        log("  \(system.name.title), connect+call+close, \(clients) clients: \(Int(try result.number("rate")))/s")
    }

    /// One event to `subscribers`; at the table's two counts also the burst and the memory per subscriber.
    private func fanout(_ system: any MeasuredSystem, subscribers: Int, round: Int) throws {
        let inTable = subscribers == settings.small || subscribers == settings.large
        // The table's counts are measured on a fresh instance, so that the memory figure is that
        // of the subscribers alone: allocators keep what earlier runs freed.
        let target = inTable ? try system.fresh() : system
        defer { if inTable { target.stop() } }
        let result = try target.fanout(
            subscribers: subscribers,
            events: settings.events,
            burst: inTable ? settings.burst : 0
        )
        let lasts = try result.numbers("event_ms")
        let last = Samples.median(lasts) ?? 0
        samples.record(.broadcast(subscribers: subscribers), system.name, round: round, last)
        let spreads = zip(lasts, try result.numbers("first_receipt_ms")).map { $0 - $1 }
        if let spread = Samples.median(spreads) {
            samples.record(.spread(subscribers: subscribers), system.name, round: round, spread)
        }
        if system.name != .dbus, let reply = Samples.median(try result.numbers("trigger_reply_ms")) {
            samples.record(.triggerReply(subscribers: subscribers), system.name, round: round, reply)
        }
        if inTable {
            let (count, perSecond) = (Double(subscribers), try result.number("deliveries_per_s"))
            samples.record(.deliveries(subscribers: subscribers), system.name, round: round, perSecond)
            let user = (try result.number("rss_after_kib") - result.number("rss_before_kib")) * 1024 / count
            samples.record(.userPerSubscriber(subscribers: subscribers), system.name, round: round, user)
        }
        if subscribers == settings.large {
            let kernel =
                (try result.number("slab_after_kib") - result.number("slab_before_kib")) * 1024 / Double(subscribers)
            samples.record(.kernelPerSubscriber, system.name, round: round, kernel)
        }
        log(
            "  \(system.name.title), \(subscribers) subscribers: last receipt "
                + String(format: "%.2f ms (set-up %.0f ms)", last, try result.number("setup_ms"))
        )
    }

    /// A fresh instance: exec until ready, and its idle RSS.
    private func startup(_ system: any MeasuredSystem, round: Int) throws {
        let result = try system.startup()
        samples.record(.ready, system.name, round: round, try result.number("ready_us") / 1000)
        samples.record(.idleRSS, system.name, round: round, try result.number("rss_kib") * 1024)
        log(
            "  \(system.name.title), start-up: "
                + String(
                    format: "%.1f ms, idle RSS %.1f MB",
                    try result.number("ready_us") / 1000,
                    try result.number("rss_kib") / 1000
                )
        )
    }

    /// ImportTokens renewing one account, end to end (p50), beside the disk floor: appending a
    /// record the size of one sealed account to a file on the same file system, with fdatasync;
    /// and, for the record, one atomic replacement of a file the size of that sesamed's store.
    private func persistedChanges(round: Int) throws {
        for target in persistence {
            let result = try target.system.call(target.trigger, clients: 1, count: settings.changes)
            let p50 = try result.number("p50_us") / 1000
            samples.record(.persistedChange(accounts: target.accounts), .sesame, round: round, p50)
            let directory = (target.stateDirectory as NSString).deletingLastPathComponent
            let floor = try DiskFloor.appends(
                directory: directory,
                bytes: SesameInstance.sealedAccountBytes,
                count: settings.changes
            )
            let replacement = try DiskFloor.atomicWrites(
                directory: directory,
                bytes: DiskFloor.size(of: target.stateDirectory + "/sessions.store"),
                count: settings.changes
            )
            samples.record(.persistedChange(accounts: target.accounts), .floor, round: round, floor)
            log(
                "  sesamed, one persisted change with \(target.accounts) accounts: p50 "
                    + String(
                        format: "%.2f ms (an appended record alone: %.2f ms; replacing the store file: %.2f ms)",
                        p50,
                        floor,
                        replacement
                    )
            )
        }
    }

    /// Progress, on stderr so that stdout holds only the table.
    private func log(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}
