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

    /// `sesamectl token`, the C client's same GetToken (the floor column), and `sesamectl --version`.
    func measure(into samples: inout Samples, round: Int) throws {
        let token = try median(of: [tools.sesamectl, "token", account, "--socket", socket])
        let floor = try cClient.map { try median(of: [$0, socket, getToken]) }
        let version = try median(of: [tools.sesamectl, "--version"])
        samples.record(.clientProcess(.token), .sesame, round: round, token)
        if let floor { samples.record(.clientProcess(.token), .floor, round: round, floor) }
        samples.record(.clientProcess(.version), .sesame, round: round, version)
        let line =
            String(format: "  sesamectl token: %.2f ms, --version: %.2f ms", token, version)
            + (floor.map { String(format: ", the C client: %.2f ms", $0) } ?? "")
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// The median wall time (ms) of `count` runs of `command`, each from spawn to exit.
    private func median(of command: [String]) throws -> Double {
        let runs = try Helpers.run(tools.client, ["runs", "--count", "\(count)", "--"] + command)
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
    }
}
