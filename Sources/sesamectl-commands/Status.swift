import ArgumentParser
import SesameClient
import SesameCore
import SesameProtocol
import SesameWire

/// `sesamectl status [ACCOUNT]`: is the daemon up, and what accounts does it hold; or whether one
/// account's session is usable, as an exit status for scripts.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether sesamed is running and the accounts you may see, or one account's state.",
        discussion: """
            Without ACCOUNT, the exit status is 0 when sesamed answered, 3 when it is not running, \
            1 on any other error. With ACCOUNT: 0 when its session is usable (a token can be had \
            now), 1 when it needs a login or is logged out, 2 when there is no such account (or \
            you may not see it), 3 when sesamed is not running. An access token stays valid by \
            its expiry time even after its grant was revoked at the provider: --check asks the \
            provider whether it still accepts it, and a token it rejects is refreshed, or the \
            account needs a login (status 1).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(
        help: "An account: whether its session is usable (the exit status), then its times and last error.",
        completion: .accountIDs
    )
    var account: String?

    @Flag(name: .long, help: "Print the status as JSON.")
    var json = false

    @Flag(name: .long, help: "With ACCOUNT: ask the provider whether it still accepts the access token.")
    var check = false

    func run() async throws {
        if let account {
            try await accountStatus(account)
            return
        }
        try await reportingFailures(about: account, at: options.socket) {
            let (info, accounts, socketPath) = try await options.withClient { client in
                (try await client.serviceInfo(), try await client.accounts(), client.socketPath)
            }
            guard !json else {
                struct Daemon: Encodable {
                    var product, version, socket: String
                    var accounts: [Account]
                }
                let daemon = Daemon(
                    product: info.product,
                    version: info.version,
                    socket: socketPath,
                    accounts: accounts
                )
                printLine(try Formatting.json(daemon))
                return
            }
            printLine("\(info.product) \(info.version) on \(socketPath)")
            printLine("accounts: \(accounts.count)")
            for account in accounts {
                printLine("  " + Formatting.accountLine(account))
            }
        }
    }

    /// One line about the account, and the exit status the discussion above promises.
    private func accountStatus(_ id: String) async throws {
        let client: SesameClient
        do {
            client = try await options.connect()
        } catch let failure as ExitError {
            printError(failure.description)
            throw ExitCode(3)
        }
        let socket = options.socket ?? SocketPaths.forClients()
        let status = await Self.status(of: id, client, json: json, check: check, socket: socket)
        await client.close()
        if status != 0 { throw ExitCode(status) }
    }

    private static func status(of id: String, _ client: SesameClient, json: Bool, check: Bool, socket: String) async
        -> Int32
    {
        do {
            let account = try await client.account(id)
            switch account.state {
            case .needsLogin, .loggedOut:
                let fix = "run `sesamectl login \(account.provider)`"
                report(id, usable: false, account, json: json, line: "\(id): \(account.state.rawValue); \(fix)")
                return 1
            case .active, .refreshing, .expired:
                if check { return try await checked(id, client, json: json) }
                // An expired token is usable if sesamed can refresh it now; asking is the test.
                _ = try await client.accessToken(for: id)
                // Read again: the refresh that asking may have made shows in the times.
                let now = (try? await client.account(id)) ?? account
                report(id, usable: true, now, json: json, line: "\(id): usable")
                return 0
            }
        } catch SesameError.session(.noSuchAccount) {
            printError(SesameError.session(.noSuchAccount(id)).sentence(askedAt: socket))
            return 2
        } catch {
            printLine(json ? Self.json(AccountStatus(id, usable: false, nil)) : "\(id): not usable now: \(error)")
            return 1
        }
    }

    /// The status after asking the provider about the access token (`--check`).
    private static func checked(_ id: String, _ client: SesameClient, json: Bool) async throws -> Int32 {
        let result = try await client.check(id)
        let usable = result.verdict != .rejected || result.refreshed
        let why = result.detail.map { " (\($0.forDisplay(limit: 300)))" } ?? ""
        let line =
            switch (result.verdict, usable) {
            case (.accepted, _): "\(id): usable; the provider accepts its access token"
            case (.rejected, true):
                "\(id): usable; the provider had stopped accepting its access token\(why), and sesamed refreshed it"
            case (.rejected, false):
                "\(id): \(result.account.state.rawValue); the provider no longer accepts its access token\(why); "
                    + (result.account.state == .needsLogin
                        ? "run `sesamectl login \(result.account.provider)`"
                        : "no new one was had now; `sesamectl refresh \(id)` says why")
            case (.unknown, _):
                "\(id): usable by its expiry time; the provider could not say whether it still accepts it\(why)"
            }
        report(id, usable: usable, result.account, checked: result.verdict, json: json, line: line)
        return usable ? 0 : 1
    }

    /// Prints the account's status: `line` and the details under it, or the JSON object.
    private static func report(
        _ id: String,
        usable: Bool,
        _ account: Account,
        checked: TokenVerdict? = nil,
        json: Bool,
        line: String
    ) {
        guard !json else {
            printLine(Self.json(AccountStatus(id, usable: usable, account, checked: checked)))
            return
        }
        printLine(line)
        for detail in details(of: account) { printLine(detail) }
    }

    /// One account's status as a JSON object.
    private static func json(_ status: AccountStatus) -> String {
        (try? Formatting.json(status)) ?? "{}"
    }
}
