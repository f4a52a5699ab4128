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
            let client = try await options.connect()
            let info = try await client.serviceInfo()
            let accounts = try await client.accounts()
            await client.close()
            printLine("\(info.product) \(info.version) on \(client.socketPath)")
            printLine("accounts: \(accounts.count)")
            for account in accounts {
                let name = account.displayName ?? account.subject
                printLine("  \(account.id)  \(account.provider)  \(name)  \(account.state.rawValue)")
            }
        }
    }
}
