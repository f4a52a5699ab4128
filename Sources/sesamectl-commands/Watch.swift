import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `sesamectl watch`: prints events as they happen, one line each.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print session events as they happen, one line each.",
        discussion: """
            The first line says from which sequence number on events are shown. With --since, the \
            events after that number come first, or a resync with every account when they are no \
            longer kept. With --follow (the default on a terminal), a lost connection is said in \
            one line, and watch reconnects and resumes after the last event it printed.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Print each reply as one JSON object per line.")
    var json = false

    @Option(name: .long, help: "Only events of this account (repeatable).", completion: .accountIDs)
    var account: [String] = []

    @Option(name: .long, help: "Only events of this kind (repeatable): loggedIn, expiring, expired, ...")
    var kind: [AuthEvent.Kind] = []

    @Option(name: .long, help: "Replay the events after this sequence number first.")
    var since: UInt64?

    @Flag(
        inversion: .prefixedNo,
        help: """
            --follow reconnects and resumes when sesamed restarts; --no-follow ends when the \
            connection does (default: --follow on a terminal). Either way, watch runs until \
            interrupted.
            """
    )
    var follow: Bool?

    func run() async throws {
        if follow ?? (isatty(STDOUT_FILENO) == 1) {
            try await reportingFailures {
                let updates = SesameClient.followEvents(
                    socketPath: options.socket,
                    accounts: account.isEmpty ? nil : account,
                    kinds: kind.isEmpty ? nil : kind,
                    since: since
                )
                for try await update in updates {
                    printLine(json ? try update.jsonLine() : update.textLine)
                }
            }
            return
        }
        try await reportingFailures {
            let client = try await options.connect()
            let updates = try await client.events(
                accounts: account.isEmpty ? nil : account,
                kinds: kind.isEmpty ? nil : kind,
                since: since
            )
            do {
                for try await update in updates {
                    printLine(json ? try update.jsonLine() : update.textLine)
                }
            } catch SesameError.disconnected {
                // Falls through to the same message as a stream that ended without an error.
            }
            throw ExitError.message("sesamed closed the connection.")
        }
    }
}

extension AuthEvent.Kind: ExpressibleByArgument {}

extension SubscriptionUpdate {
    var textLine: String {
        switch self {
        case .ready(let sequence):
            return "ready sequence=\(sequence)"
        case .resync(let sequence, let accounts):
            let states = accounts.map { "\($0.id)=\($0.state.rawValue)" }.joined(separator: " ")
            return "resync sequence=\(sequence) accounts=\(accounts.count)\(states.isEmpty ? "" : " ")\(states)"
        case .reconnecting(let after):
            return "-- lost the connection to sesamed\(after.map { " after sequence \($0)" } ?? ""); reconnecting"
        case .event(let event):
            var line = "\(event.sequence) \(Formatting.time(event.time)) \(event.kind.rawValue) \(event.account)"
            line += " provider=\(event.provider) state=\(event.state.rawValue)"
            if let expiry = event.accessTokenExpiresAt { line += " expires=\(Formatting.time(expiry))" }
            if event.kind == .refreshTokenExpiring, let end = event.refreshTokenExpiresAt {
                line += " refresh-token-expires=\(Formatting.time(end)) next=\"sesamectl login \(event.provider)\""
            }
            if let reason = event.reason { line += " reason=\(reason.rawValue)" }
            if let revoked = event.revokedRemotely { line += " revoked-at-provider=\(revoked ? "yes" : "no")" }
            if let retry = event.retryAt { line += " retry=\(Formatting.time(retry))" }
            if let detail = event.detail { line += " detail=\(String(reflecting: detail))" }
            return line
        }
    }

    func jsonLine() throws -> String {
        switch self {
        case .ready(let sequence):
            return try Formatting.json(["ready": ["sequence": sequence]])
        case .event(let event):
            return try Formatting.json(["event": event])
        case .resync(let sequence, let accounts):
            struct Resync: Encodable {
                var sequence: UInt64
                var accounts: [Account]
            }
            return try Formatting.json(["resync": Resync(sequence: sequence, accounts: accounts)])
        case .reconnecting(let after):
            return try Formatting.json(["reconnecting": ["after": after]])
        }
    }
}
