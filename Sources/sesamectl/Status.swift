import ArgumentParser
import SesameClient
import SesameCore

/// `sesamectl status`: is the daemon up, and what accounts does it hold.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether sesamed is running and the accounts you may see.",
        discussion: "Exit status: 0 when sesamed answered, 3 when it is not running, 1 on any other error."
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await reportingFailures {
            let (info, accounts, socketPath) = try await options.withClient { client in
                (try await client.serviceInfo(), try await client.accounts(), client.socketPath)
            }
            printLine("\(info.product) \(info.version) on \(socketPath)")
            printLine("accounts: \(accounts.count)")
            for account in accounts {
                printLine("  " + Formatting.accountLine(account))
            }
        }
    }
}
