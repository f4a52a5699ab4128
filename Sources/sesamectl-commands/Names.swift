import ArgumentParser
import SesameClient
import SesameCore

/// `sesamectl rename ACCOUNT NAME`: the name an account is known by, in place of its id.
struct Rename: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename",
        abstract: "Give an account a name to use in place of its id.",
        discussion: """
            A name is up to 64 lower-case letters, digits, '-', '_' or '.', starting with a letter, \
            and unique among your accounts. Every command that takes an account takes its name, \
            as it takes the name of a provider with which you have one account. Names pick only \
            your own accounts.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account's id or present name.", completion: .accountIDs)
    var account: String

    @Argument(help: "The new name.")
    var name: String?

    @Flag(name: .long, help: "Take the account's name away.")
    var clear = false

    @Flag(name: .long, help: "Print the account as JSON.")
    var json = false

    func validate() throws {
        guard (name == nil) == clear else { throw ValidationError("Give a NAME, or --clear to take the name away.") }
    }

    func run() async throws {
        try await reportingFailures(about: account, at: options.socket) {
            let renamed = try await options.withClient { try await $0.rename(account, to: name) }
            printLine(json ? try Formatting.json(renamed) : Formatting.accountLine(renamed))
        }
    }
}

extension GlobalOptions {
    /// `account` with the name `name`, when one was asked for (`login --name`, `import --name`),
    /// given on a connection of its own (a login's may still be closing its stream). The login
    /// itself succeeded either way: a refused name says so, and how to name it later.
    func naming(_ account: Account, as name: String?) async throws -> Account {
        guard let name, account.name != name else { return account }
        do {
            return try await withClient { try await $0.rename(account.id, to: name) }
        } catch SesameError.session(.invalidName(_, let reason)) {
            throw ExitError.message(
                "\(account.id) is logged in, but cannot be named '\(name.forDisplay(limit: 64))': \(reason); "
                    + "`sesamectl rename \(account.id) NAME` names it."
            )
        }
    }
}
