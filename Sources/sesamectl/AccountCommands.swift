import ArgumentParser
import Foundation
import SesameClient
import SesameCore

/// `sesamectl accounts`: the accounts you may see.
struct Accounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the accounts you may see.")

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Print the accounts as a JSON array.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let accounts = try await options.withClient { try await $0.accounts() }
            if json {
                printLine(try Formatting.json(accounts))
            } else {
                accounts.map(Formatting.accountLine).forEach(printLine)
            }
        }
    }
}

/// `sesamectl token ACCOUNT`: a current access token, for scripts.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a current access token of an account (refreshed by sesamed when needed).",
        discussion: "Only the token is printed, so `curl -H \"Authorization: Bearer $(sesamectl token ID)\"` works."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id (see `sesamectl accounts`).")
    var account: String

    func run() async throws {
        try await reportingFailures {
            let token = try await options.withClient { try await $0.accessToken(for: account) }
            printLine(token.accessToken)
        }
    }
}

/// `sesamectl logout ACCOUNT`.
struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "End an account's session and wipe its tokens.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id.")
    var account: String

    func run() async throws {
        try await reportingFailures {
            let result = try await options.withClient { try await $0.logout(account) }
            printLine(Self.line(result))
        }
    }

    /// What the person is told: whether the grant is gone at the provider too, when the daemon says.
    static func line(_ result: LogoutResult) -> String {
        let id = result.account.id
        switch result.revokedRemotely {
        case true?:
            return "\(id) logged out; the provider confirmed the revocation"
        case false?:
            let reason = result.notRevokedReason.map { ": \($0.forDisplay(limit: 300))" } ?? ""
            return "\(id) logged out here; not revoked at the provider\(reason)"
        case nil:
            return "\(id) logged out"
        }
    }
}

/// `sesamectl remove ACCOUNT`.
struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete an account record.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id.")
    var account: String

    func run() async throws {
        try await reportingFailures {
            try await options.withClient { try await $0.remove(account) }
            printLine("\(account) removed")
        }
    }
}

/// `sesamectl import PROVIDER --subject S < token-response.json`.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hand sesamed the tokens of a login done elsewhere.",
        discussion: """
            Reads an OAuth 2.0 token response (JSON with access_token, and optionally refresh_token, \
            id_token, token_type, expires_in, refresh_expires_in, scope) from standard input, so \
            tokens never appear on a command line.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The provider name, e.g. google.")
    var provider: String

    @Option(name: .long, help: "The provider's subject identifier for the person.")
    var subject: String

    @Option(name: .long, help: "A name to show people.")
    var displayName: String?

    func run() async throws {
        try await reportingFailures {
            let input = FileHandle.standardInput.readDataToEndOfFile()
            let response: TokenResponse
            do {
                response = try JSONDecoder().decode(TokenResponse.self, from: input)
            } catch {
                throw ExitFailure.message("standard input is not an OAuth token response with an access_token.")
            }
            let account = try await options.withClient { client in
                try await client.importTokens(
                    provider: provider,
                    subject: subject,
                    displayName: displayName,
                    tokens: ImportedTokens(
                        accessToken: response.accessToken,
                        refreshToken: response.refreshToken,
                        idToken: response.idToken,
                        tokenType: response.tokenType,
                        expiresIn: response.expiresIn,
                        refreshExpiresIn: response.refreshExpiresIn,
                        scopes: response.scope?.split(separator: " ").map(String.init)
                    )
                )
            }
            printLine(account.id)
        }
    }

    /// An RFC 6749 §5.1 token response.
    private struct TokenResponse: Decodable {
        var accessToken: String
        var refreshToken: String?
        var idToken: String?
        var tokenType: String?
        var expiresIn: Int?
        var refreshExpiresIn: Int?
        var scope: String?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case refreshToken = "refresh_token"
            case idToken = "id_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
            case refreshExpiresIn = "refresh_expires_in"
            case scope
        }
    }
}

/// `sesamectl rekey`: re-seal the token store under a new key (root).
struct Rekey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal the token store under a new key (root only).",
        discussion: """
            With a key file, sesamed makes a new key and replaces the old one; at no moment does \
            neither key open the store. With a systemd credential, install the new credential as \
            sesame.key (keeping the old one as sesame.key.previous), restart, and run this.
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await reportingFailures {
            let keyID = try await options.withClient { try await $0.rekey() }
            printLine("token store sealed with key \(keyID)")
        }
    }
}
