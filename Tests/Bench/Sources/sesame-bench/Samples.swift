import Foundation

/// What one measurement is: each row of the table shows one of these for every system.
enum Metric: Hashable {
    /// Server CPU time per GetToken (µs) with this many persistent clients.
    case serverCPU(clients: Int)
    /// The D-Bus service's CPU per call (µs), which the bus figure leaves out.
    case serviceCPU(clients: Int)
    /// GetToken calls per second with 8 persistent clients.
    case callRate
    /// p99 latency (µs) with one client.
    case latencyP99
    /// Connect, one GetToken, close: per second with this many clients.
    case connectRate(clients: Int)
    /// One event to this many subscribers: ms until the last has it.
    case broadcast(subscribers: Int)
    /// One event to this many subscribers: ms from the first subscriber's receipt to the last's.
    case spread(subscribers: Int)
    /// One event to this many subscribers: ms until the trigger's own reply.
    case triggerReply(subscribers: Int)
    /// Deliveries per second to this many subscribers (a burst of events).
    case deliveries(subscribers: Int)
    /// Daemon RSS per idle subscriber (bytes), this many subscribed to a fresh instance.
    case userPerSubscriber(subscribers: Int)
    /// Kernel slab per idle subscriber, both ends of the socket and the client's epoll (bytes).
    case kernelPerSubscriber
    /// RSS of a fresh, idle instance (bytes).
    case idleRSS
    /// exec until ready (ms).
    case ready
    /// One persisted change with this many accounts: p50 of the call's latency (ms).
    case persistedChange(accounts: Int)
    /// A whole client process, spawn to exit (ms): the CLI's `token` (the floor: a C client making
    /// the same call), or its `--version`.
    case clientProcess(ClientRun)
    /// A program's size as shipped, stripped (bytes).
    case strippedSize(Program)
    /// The Debian package: its file, or what it takes once installed (bytes).
    case packageSize(PackageFigure)
}

/// What is measured of the Debian package.
enum PackageFigure: Hashable {
    /// The .deb file as scripts/package compresses it.
    case deb
    /// dpkg's Installed-Size: every file the package installs.
    case installed
}

/// What a client process is run for.
enum ClientRun: Hashable {
    /// One access token, printed.
    case token
    /// Its version only: start-up and exit.
    case version
    /// git's credential helper answering `get` with a token.
    case gitCredential
}

/// Which program's size is compared.
enum Program: Hashable {
    /// The daemon: sesamed, the floor server, dbus-daemon.
    case daemon
    /// The command-line client: sesamectl, the C client, dbus-send.
    case client
    /// The program sesamectl runs in its place for every command but `token`: sesamectl-commands.
    case clientCommands
}

/// Every value measured in a run: per metric and system, one value per round.
struct Samples {
    private var values: [Metric: [SystemName: [Int: Double]]] = [:]

    /// Records `value` for `metric` of `system` in `round`.
    mutating func record(_ metric: Metric, _ system: SystemName, round: Int, _ value: Double) {
        values[metric, default: [:]][system, default: [:]][round] = value
    }

    /// The values of every round, in round order.
    func all(_ metric: Metric, _ system: SystemName) -> [Double] {
        (values[metric]?[system] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
    }

    /// The median over the rounds; nil if never measured.
    func median(_ metric: Metric, _ system: SystemName) -> Double? {
        Self.median(all(metric, system))
    }

    /// The median over the rounds of `system`'s value divided by `reference`'s in the same round.
    func ratio(_ metric: Metric, _ system: SystemName, to reference: SystemName) -> Double? {
        guard let mine = values[metric]?[system], let theirs = values[metric]?[reference] else { return nil }
        let ratios = mine.compactMap { round, value in theirs[round].flatMap { $0 > 0 ? value / $0 : nil } }
        return Self.median(ratios)
    }

    /// The median of `numbers` (the mean of the middle two for an even count); nil if empty.
    static func median(_ numbers: [Double]) -> Double? {
        guard !numbers.isEmpty else { return nil }
        let sorted = numbers.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// How a metric's values are shown.
enum Unit {
    case microseconds, milliseconds, perSecond, bytes, megabytes

    /// One value with its unit.
    func format(_ value: Double) -> String {
        switch self {
        case .microseconds: value < 100 ? String(format: "%.1f µs", value) : String(format: "%.0f µs", value)
        case .milliseconds: value < 10 ? String(format: "%.2f ms", value) : String(format: "%.1f ms", value)
        case .perSecond:
            value < 10_000 ? String(format: "%.2fk/s", value / 1e3) : String(format: "%.1fk/s", value / 1e3)
        case .bytes: value < 1024 ? String(format: "%.0f B", value) : String(format: "%.1f KiB", value / 1024)
        case .megabytes: value < 1e6 ? String(format: "%.0f kB", value / 1e3) : String(format: "%.1f MB", value / 1e6)
        }
    }

    /// The median with the rounds' range: "81.2 µs (79.0–85.3)", or "—" if not measured.
    func cell(_ values: [Double]) -> String {
        guard let median = Samples.median(values), let low = values.min(), let high = values.max() else { return "—" }
        if values.count == 1 { return format(median) }
        return "\(format(median)) (\(format(low))–\(format(high)))"
    }
}
