import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A failure of the benchmark itself (a helper that failed, a server that did not start).
struct BenchError: Error, CustomStringConvertible {
    let description: String

    /// An error saying `description`.
    init(_ description: String) { self.description = description }
}

/// What a helper printed: the `key=value` pairs of its first line, and its whole text.
struct HelperOutput {
    let values: [String: String]
    let text: String

    /// Parses a helper's stdout.
    init(text: String) {
        self.text = text
        let firstLine = text.split(separator: "\n", maxSplits: 1).first ?? ""
        var values: [String: String] = [:]
        for pair in firstLine.split(separator: " ") {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            values[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        self.values = values
    }

    /// The number printed as `key`; throws if it is missing.
    func number(_ key: String) throws -> Double {
        guard let value = values[key].flatMap(Double.init) else { throw BenchError("no \(key) in: \(text)") }
        return value
    }

    /// The comma-separated numbers printed as `key`; throws if missing.
    func numbers(_ key: String) throws -> [Double] {
        guard let list = values[key] else { throw BenchError("no \(key) in: \(text)") }
        return list.split(separator: ",").compactMap { Double($0) }
    }

    /// The text after the first line (a reply or an event, for `call` and `event`).
    var body: String { text.split(separator: "\n", maxSplits: 1).dropFirst().first.map(String.init) ?? "" }
}

/// Runs the helper programs, each to its end.
enum Helpers {
    /// Runs `executable` with `arguments`, waits, and parses what it printed; throws if it failed.
    static func run(_ executable: String, _ arguments: [String]) throws -> HelperOutput {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let result = HelperOutput(text: text)
        guard process.terminationStatus == 0, result.values["failed"] ?? "0" == "0" else {
            let name = URL(fileURLWithPath: executable).lastPathComponent
            throw BenchError("\(name) \(arguments.first ?? "") failed (\(process.terminationStatus)): \(text)")
        }
        return result
    }

    /// Raises this process's open-file limit to its hard limit; the servers and clients inherit it.
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// A server the benchmark started and stops: its output goes to a log file, or to a pipe when
/// its first line is what says it is ready.
final class Server {
    private let process = Process()
    private let output: Pipe?
    let name: String

    /// The server's process id.
    var pid: Int32 { process.processIdentifier }

    /// Starts `executable`; with `readable`, its stdout can be read with `firstLine`.
    init(_ executable: String, _ arguments: [String], log: String, readable: Bool = false) throws {
        name = URL(fileURLWithPath: executable).lastPathComponent
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] { environment[key] = nil }
        process.environment = environment
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let logFile = FileHandle(forWritingAtPath: log)
        output = readable ? Pipe() : nil
        process.standardOutput = output ?? logFile
        process.standardError = logFile
        try process.run()
    }

    /// The first line the server printed (dbus-daemon's address, the D-Bus service's "ready").
    func firstLine() throws -> String {
        guard let handle = output?.fileHandleForReading else { throw BenchError("\(name): no pipe") }
        var data = Data()
        while !data.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            if chunk.isEmpty { throw BenchError("\(name) exited before it was ready") }
            data.append(chunk)
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    }

    /// Stops the server: SIGTERM, and SIGKILL if it is still running after ten seconds.
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }
}
