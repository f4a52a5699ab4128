import ArgumentParser
import SesameClient
import SesameProtocol
import SesameWire

/// `sesamectl providers --check`: each provider's file checked against the provider, one line
/// per check, every problem with the file and key to mend.
enum ProviderCheckReport {
    /// Checks `provider`, or every configured one, and prints what each check found; exits 1
    /// when any did not pass.
    static func run(_ provider: String?, json: Bool, options: GlobalOptions) async throws {
        let reports: [(name: String, reply: CheckProviderReply)]
        do {
            reports = try await options.withClient { client in
                var names = [provider].compactMap { $0 }
                if names.isEmpty { names = try await client.providers().map(\.name) }
                var reports: [(name: String, reply: CheckProviderReply)] = []
                for name in names { reports.append((name, try await client.checkProvider(name))) }
                return reports
            }
        } catch SesameError.permissionDenied {
            throw ExitError.message(
                "only who may mend this sesamed's provider files may check them: root for the system's "
                    + "(`sudo sesamectl providers --check`), the user a per-user sesamed runs as for theirs."
            )
        }
        let socket = options.socket ?? SocketPaths.forClients()
        if json {
            printLine(
                try Formatting.json(
                    reports.map { Report(provider: $0.name, file: $0.reply.file, checks: $0.reply.checks) }
                )
            )
        } else if reports.isEmpty {
            printLine("no providers to check.")
        } else {
            for (index, report) in reports.enumerated() {
                if index > 0 { printLine("") }
                lines(for: report.name, report.reply, socket: socket).forEach(printLine)
            }
        }
        if reports.contains(where: { $0.reply.checks.contains { $0.problem != nil } }) { throw ExitCode(1) }
    }

    /// One provider's lines: its name and file, then one line per check, and what to do last
    /// (how to make the sesamed at `socket` read the mended file).
    static func lines(for name: String, _ reply: CheckProviderReply, socket: String) -> [String] {
        let file = (reply.file ?? "its provider file").forDisplay(limit: 300)
        var lines = ["\(name.forDisplay(limit: 80)) (\(file))"]
        for check in reply.checks {
            let subject = check.subject.forDisplay(limit: 80)
            let url = check.url.map { " \($0.forDisplay(limit: 300))" } ?? ""
            if let problem = check.problem {
                let key = check.key.map { " [\($0.forDisplay(limit: 80))]" } ?? ""
                lines.append("  FAIL \(subject)\(url): \(problem.forDisplay(limit: 300))\(key)")
            } else {
                lines.append("  ok   \(subject)\(url): \((check.finding ?? "passed").forDisplay(limit: 300))")
            }
        }
        let keys = Set(reply.checks.filter { $0.problem != nil }.compactMap(\.key)).sorted()
        if !keys.isEmpty {
            let shown = keys.map { $0.forDisplay(limit: 80) }.joined(separator: ", ")
            lines.append("  mend \(shown) in \(file), then \(ProviderSetup.reloadStep(for: socket)).")
        }
        return lines
    }

    /// What `--json` prints for one provider.
    private struct Report: Encodable {
        var provider: String
        var file: String?
        var checks: [ProviderCheck]
    }
}
