import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `sesamectl accounts`: the accounts you may see.
struct Accounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "accounts", abstract: "List the accounts you may see.")

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Print the accounts as a JSON array.")
    var json = false

    @Flag(name: .long, help: "Leave out the table's header (shown on a terminal).")
    var noLegend = false

    /// For shell completion: the ids alone, one a line, and the names of your own accounts.
    @Flag(name: .long, help: .hidden)
    var ids = false

    func run() async throws {
        try await reportingFailures {
            let accounts = try await options.withClient { try await $0.accounts() }
            if ids {
                let mine = accounts.filter { $0.ownerUID == getuid() }
                (accounts.map(\.id) + mine.compactMap(\.name)).forEach(printLine)
            } else if json {
                printLine(try Formatting.json(accounts))
            } else {
                let terminal = Terminal(STDOUT_FILENO)
                if accounts.isEmpty {
                    // Off a terminal an empty list is no lines, as scripts expect.
                    if terminal.isTerminal {
                        printLine(
                            "no accounts; `sesamectl providers` lists where to log in, "
                                + "`sesamectl login PROVIDER` logs in"
                        )
                    }
                    return
                }
                let legend = terminal.isTerminal && !noLegend
                Formatting.accountTable(accounts, legend: legend, on: terminal).forEach(printLine)
            }
        }
    }
}

/// `sesamectl logout ACCOUNT`.
struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "End an account's session and wipe its tokens."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id.", completion: .accountIDs)
    var account: String

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures(about: account, at: options.socket) {
            do {
                let result = try await options.withClient { try await $0.logout(account) }
                printLine(json ? try Formatting.json(result) : Self.line(result))
            } catch SesameError.refused(.invalidTransition(_, from: .loggedOut, to: .loggedOut)) {
                // What the person wanted is already so: say it, and succeed.
                printLine(
                    json ? try Formatting.json(["alreadyLoggedOut": account]) : "\(account) is already logged out"
                )
            }
        }
    }

    /// What the person is told: whether the grant is gone at the provider too. The account goes
    /// by the name its owner gave it, where it has one.
    static func line(_ result: LogoutResult) -> String {
        let id = result.account.name ?? result.account.id
        guard !result.revokedRemotely else { return "\(id) logged out; the provider confirmed the revocation" }
        let reason = result.notRevokedReason.map { ": \($0.forDisplay(limit: 300))" } ?? ""
        return "\(id) logged out here; not revoked at the provider\(reason)"
    }
}

/// `sesamectl refresh ACCOUNT`.
struct Refresh: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Refresh an account's tokens now."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id.", completion: .accountIDs)
    var account: String

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures(about: account, at: options.socket) {
            let refreshed = try await options.withClient(about: account) { try await $0.refresh(account) }
            printLine(json ? try Formatting.json(refreshed) : Formatting.accountLine(refreshed))
        }
    }
}

/// `sesamectl remove ACCOUNT`.
struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Delete an account record.",
        discussion: """
            An account that is not logged out still holds a grant at its provider: removing it \
            needs --force, and then logs it out first (revoking the grant) unless --no-revoke.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id.", completion: .accountIDs)
    var account: String

    @Flag(name: .long, help: "Remove an account that is not logged out (logging it out first).")
    var force = false

    @Flag(name: .long, help: "With --force: do not log out (revoke) first; the grant stays at the provider.")
    var noRevoke = false

    func run() async throws {
        try await reportingFailures(about: account, at: options.socket) {
            try await options.withClient { client in
                let current = try await client.account(account)
                if current.state != .loggedOut {
                    guard force else {
                        throw ExitError.message(
                            "\(account) is \(current.state.rawValue), not logged out: `sesamectl logout \(account)` "
                                + "first, or remove it with --force (which logs it out unless --no-revoke)."
                        )
                    }
                    if !noRevoke { printLine(Logout.line(try await client.logout(account))) }
                }
                try await client.remove(account)
            }
            printLine("\(account) removed")
        }
    }
}
