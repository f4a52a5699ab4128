import Foundation

/// What sesamed's figure must be, as ratios to the references in the same run or as a bound.
struct Target {
    var floorAtMost: Double? = nil
    var floorAtLeast: Double? = nil
    var dbusAtMost: Double? = nil
    var dbusAtLeast: Double? = nil
    var atMost: Double? = nil
    let text: String

    /// "met", "NOT met", or "—" when there is no target or nothing to compare.
    func verdict(_ samples: Samples, _ metric: Metric) -> String {
        var checks: [Bool?] = []
        let floorRatio = samples.ratio(metric, .sesame, to: .floor)
        let dbusRatio = samples.ratio(metric, .sesame, to: .dbus)
        if let bound = floorAtMost { checks.append(floorRatio.map { $0 <= bound }) }
        if let bound = floorAtLeast { checks.append(floorRatio.map { $0 >= bound }) }
        if let bound = dbusAtMost { checks.append(dbusRatio.map { $0 <= bound }) }
        if let bound = dbusAtLeast { checks.append(dbusRatio.map { $0 >= bound }) }
        if let bound = atMost { checks.append(samples.median(metric, .sesame).map { $0 <= bound }) }
        if checks.isEmpty || checks.contains(where: { $0 == nil }) { return "—" }
        return checks.allSatisfy { $0 == true } ? "met" : "NOT met"
    }
}

/// One line of the table.
struct Row {
    let title: String
    let metric: Metric
    let unit: Unit
    let target: Target?

    /// A row showing `metric` in `unit`, held to `target` if any.
    init(_ title: String, _ metric: Metric, _ unit: Unit, _ target: Target?) {
        self.title = title
        self.metric = metric
        self.unit = unit
        self.target = target
    }

    /// The rows with targets, for the subscriber counts measured: the server's cost per call, what a
    /// person and a script feel (the CLI, start-up, size, memory) and the broadcast.
    static func all(small: Int, large: Int) -> [Row] {
        calls + felt + broadcast(small: small, large: large) + [
            Row(
                "one persisted change, 1,000 accounts, p50",
                .persistedChange(accounts: 1000),
                .milliseconds,
                Target(atMost: 5, text: "≤ 5 ms p50")
            )
        ]
    }

    /// GetToken: the server's CPU, rate and latency, and a connection per call.
    private static var calls: [Row] {
        let cpu = Target(floorAtMost: 2.5, dbusAtMost: 0.5, text: "≤ 2.5× floor, ≤ 0.5× dbus")
        let connects = Target(floorAtLeast: 0.6, text: "≥ 0.6× floor")
        return [
            Row("server CPU per GetToken, 1 client", .serverCPU(clients: 1), .microseconds, cpu),
            Row("server CPU per GetToken, 8 clients", .serverCPU(clients: 8), .microseconds, cpu),
            Row("server CPU per GetToken, 64 clients", .serverCPU(clients: 64), .microseconds, cpu),
            Row(
                "GetToken/s, 8 persistent clients",
                .callRate,
                .perSecond,
                Target(floorAtLeast: 0.5, dbusAtLeast: 2, text: "≥ 0.5× floor and ≥ 2× dbus")
            ),
            Row("p99, 1 client", .latencyP99, .microseconds, Target(floorAtMost: 2, text: "≤ 2× floor")),
            Row("connect + one GetToken + close, 1 client", .connectRate(clients: 1), .perSecond, connects),
            Row("connect + one GetToken + close, 8 clients", .connectRate(clients: 8), .perSecond, connects),
        ]
    }

    /// What a person and a script feel: the CLI's run, the programs' sizes, start-up and idle memory.
    private static var felt: [Row] {
        [
            Row(
                "`sesamectl token`, whole process (floor: a C client's same call)",
                .clientProcess(.token),
                .milliseconds,
                Target(floorAtMost: 1.3, text: "≤ 1.3× the C client")
            ),
            Row(
                "`git-credential-sesame get`, whole process",
                .clientProcess(.gitCredential),
                .milliseconds,
                Target(atMost: 5, text: "≤ 5 ms")
            ),
            Row("stripped size, daemon", .strippedSize(.daemon), .megabytes, Target(atMost: 30e6, text: "≤ 30 MB")),
            Row("stripped size, client", .strippedSize(.client), .megabytes, Target(atMost: 12e6, text: "≤ 12 MB")),
            Row(
                "stripped size, sesamectl-commands (every other command, the credential helpers)",
                .strippedSize(.clientCommands),
                .megabytes,
                Target(atMost: 20e6, text: "≤ 20 MB")
            ),
            Row(
                ".deb, as scripts/package builds it",
                .packageSize(.deb),
                .megabytes,
                Target(atMost: 15e6, text: "≤ 15 MB")
            ),
            Row(
                "installed (dpkg's Installed-Size)",
                .packageSize(.installed),
                .megabytes,
                Target(atMost: 50e6, text: "≤ 50 MB")
            ),
            Row("exec → READY=1", .ready, .milliseconds, Target(atMost: 10, text: "≤ 10 ms")),
            Row("idle RSS", .idleRSS, .megabytes, Target(atMost: 10e6, text: "≤ 10 MB")),
        ]
    }

    /// One event to many subscribers: the last receipt, deliveries per second, memory per subscriber.
    private static func broadcast(small: Int, large: Int) -> [Row] {
        let deliveries = Target(floorAtLeast: 0.8, text: "≥ 0.8× floor")
        let memory = Target(atMost: 3072, text: "≤ 3 KiB (user space)")
        return [
            Row(
                "one event to \(count(small)) subscribers, last receipt",
                .broadcast(subscribers: small),
                .milliseconds,
                Target(floorAtMost: 1.5, dbusAtMost: 0.5, text: "≤ 1.5× floor, ≤ 0.5× dbus")
            ),
            Row(
                "one event to \(count(large)) subscribers, last receipt",
                .broadcast(subscribers: large),
                .milliseconds,
                Target(floorAtMost: 1.3, text: "≤ 1.3× floor")
            ),
            Row("deliveries/s, \(count(small)) subscribers", .deliveries(subscribers: small), .perSecond, deliveries),
            Row("deliveries/s, \(count(large)) subscribers", .deliveries(subscribers: large), .perSecond, deliveries),
            Row("memory per idle subscriber, \(count(small))", .userPerSubscriber(subscribers: small), .bytes, memory),
            Row("memory per idle subscriber, \(count(large))", .userPerSubscriber(subscribers: large), .bytes, memory),
        ]
    }

    /// Figures shown for context, without a target.
    static func context(small: Int, large: Int) -> [Row] {
        return [
            Row("`sesamectl --version`, whole process", .clientProcess(.version), .milliseconds, nil),
            Row("first to last receipt, \(count(small)) subscribers", .spread(subscribers: small), .milliseconds, nil),
            Row("first to last receipt, \(count(large)) subscribers", .spread(subscribers: large), .milliseconds, nil),
            Row("kernel slab per idle subscriber (both socket ends, system-wide)", .kernelPerSubscriber, .bytes, nil),
            Row(
                "trigger's own reply, \(count(large)) subscribers",
                .triggerReply(subscribers: large),
                .milliseconds,
                nil
            ),
            Row(
                "D-Bus service CPU per call, 8 clients (not in the bus figure)",
                .serviceCPU(clients: 8),
                .microseconds,
                nil
            ),
            Row("one persisted change, 1 account, p50", .persistedChange(accounts: 1), .milliseconds, nil),
        ]
    }

    /// 10000 as "10,000".
    static func count(_ number: Int) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.groupingSeparator = ","
        formatter.usesGroupingSeparator = true
        return formatter.string(from: NSNumber(value: number)) ?? "\(number)"
    }

    /// The row as a Markdown table line.
    func line(_ samples: Samples) -> String {
        let cells = SystemName.allCases.map { unit.cell(samples.all(metric, $0)) }
        let ratios = [SystemName.floor, .dbus].map { reference in
            samples.ratio(metric, .sesame, to: reference).map { String(format: "%.2f×", $0) } ?? "—"
        }
        let verdict = target?.verdict(samples, metric) ?? "—"
        return "| \(title) | " + (cells + ratios).joined(separator: " | ")
            + " | \(target?.text ?? "—") | \(verdict) |"
    }

    /// The table's header lines.
    static let header = """
        | figure | floor | dbus-daemon | sesamed | sesamed/floor | sesamed/dbus | target | verdict |
        |---|---|---|---|---|---|---|---|
        """
}
