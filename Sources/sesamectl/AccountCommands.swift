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
    static let configuration = CommandConfiguration(abstract: "End an account's session and wipe its tokens.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id.", completion: .accountIDs)
    var account: String

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
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

    /// What the person is told: whether the grant is gone at the provider too.
    static func line(_ result: LogoutResult) -> String {
        let id = result.account.id
        guard !result.revokedRemotely else { return "\(id) logged out; the provider confirmed the revocation" }
        let reason = result.notRevokedReason.map { ": \($0.forDisplay(limit: 300))" } ?? ""
        return "\(id) logged out here; not revoked at the provider\(reason)"
    }
}

/// `sesamectl refresh ACCOUNT`.
struct Refresh: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Refresh an account's tokens now.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account id.", completion: .accountIDs)
    var account: String

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let refreshed = try await options.withClient(about: account) { try await $0.refresh(account) }
            printLine(json ? try Formatting.json(refreshed) : Formatting.accountLine(refreshed))
        }
    }
}

/// `sesamectl remove ACCOUNT`.
struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
        try await reportingFailures {
            try await options.withClient { client in
                let current = try await client.account(account)
                if current.state != .loggedOut {
                    guard force else {
                        throw ExitFailure.message(
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

/// `sesamectl import PROVIDER --subject S < token-response.json`.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hand sesamed the tokens, or the authorization code, of a login done elsewhere.",
        discussion: """
            Reads an OAuth 2.0 token response (JSON with access_token, and optionally refresh_token, \
            id_token, token_type, expires_in, refresh_token_expires_in or refresh_expires_in, scope) from standard input, so \
            tokens never appear on a command line; --subject names the person.

            With --code, sesamed redeems an authorization code your app or web page obtained (code \
            handover; the only way for Sign in with Apple). --code - reads the bare code from \
            standard input, or JSON with code and what the authorization request was bound to: \
            redirect_uri, code_verifier, state, and Apple's user field as posted.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The provider name, e.g. google.", completion: .providerNames)
    var provider: String

    @Option(name: .long, help: "The provider's subject identifier for the person (token import).")
    var subject: String?

    @Option(name: .long, help: "A name to show people.")
    var displayName: String?

    @Option(name: .long, help: "A name for the account, to use in place of its id (see `sesamectl rename`).")
    var name: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Redeem an authorization code read from FILE, or - for standard input.", valueName: "FILE")
    )
    var code: String?

    @Option(name: .long, help: "The redirect URI the code was issued for (with --code).")
    var redirectUri: String?

    @Flag(name: .long, help: "Print the account as JSON.")
    var json = false

    func validate() throws {
        if code == nil && subject == nil { throw ValidationError("Give --subject with a token response, or --code.") }
        if code != nil && subject != nil {
            throw ValidationError("--subject does not go with --code: the provider says who logged in.")
        }
        if code == nil && redirectUri != nil { throw ValidationError("--redirect-uri goes with --code.") }
    }

    func run() async throws {
        try await reportingFailures {
            if let code { return try await redeem(code) }
            let subject = subject ?? ""
            let input = FileHandle.standardInput.readDataToEndOfFile()
            let response: TokenResponse
            do {
                response = try JSONDecoder().decode(TokenResponse.self, from: input)
            } catch {
                throw ExitFailure.message("standard input is not an OAuth token response with an access_token.")
            }
            let imported = try await options.withClient { client in
                try await client.importTokens(
                    provider: provider,
                    subject: subject,
                    displayName: displayName,
                    tokens: ImportedTokens(
                        accessToken: response.accessToken,
                        refreshToken: response.refreshToken,
                        idToken: response.idToken,
                        tokenType: response.tokenType,
                        expiresIn: response.expiresIn.map(Int64.init),
                        refreshExpiresIn: (response.refreshExpiresIn ?? response.legacyRefreshExpiresIn).map(
                            Int64.init
                        ),
                        scopes: response.scope?.split(separator: " ").map(String.init)
                    )
                )
            }
            let account = try await options.naming(imported, as: name)
            printLine(json ? try Formatting.json(account) : account.id)
        }
    }

    /// Redeems the handed-over code read from `source`.
    private func redeem(_ source: String) async throws {
        let input: Data
        if source == "-" {
            input = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let data = FileManager.default.contents(atPath: source) else {
                throw ExitFailure.message("cannot read \(source).")
            }
            input = data
        }
        var handover = try Self.handover(from: input)
        handover.redirectURI = redirectUri ?? handover.redirectURI
        let redeemed = try await options.withClient { client in
            try await client.redeemCode(provider: provider, handover, displayName: displayName)
        }
        let account = try await options.naming(redeemed, as: name)
        printLine(
            json ? try Formatting.json(account) : "logged in: \(account.id) (\(Formatting.name(of: account)))"
        )
    }

    /// The bare code, or JSON with `code` and what the authorization request was bound to.
    static func handover(from input: Data) throws -> HandedOverCode {
        struct Fields: Decodable {
            var code: String
            var redirectUri: String?
            var codeVerifier: String?
            var state: String?
            var user: String?
            enum CodingKeys: String, CodingKey {
                case code, state, user
                case redirectUri = "redirect_uri"
                case codeVerifier = "code_verifier"
            }
        }
        let text = String(decoding: input, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("{") {
            guard let fields = try? JSONDecoder().decode(Fields.self, from: Data(text.utf8)) else {
                throw ExitFailure.message("the JSON on standard input has no code (or is not JSON).")
            }
            return HandedOverCode(
                code: fields.code,
                redirectURI: fields.redirectUri,
                codeVerifier: fields.codeVerifier,
                state: fields.state,
                user: fields.user
            )
        }
        guard !text.isEmpty, !text.contains(where: \.isWhitespace) else {
            throw ExitFailure.message("standard input holds no authorization code.")
        }
        return HandedOverCode(code: text)
    }

    /// An RFC 6749 §5.1 token response.
    private struct TokenResponse: Decodable {
        var accessToken: String
        var refreshToken: String?
        var idToken: String?
        var tokenType: String?
        var expiresIn: Int?
        /// `refresh_token_expires_in` (Kakao, Microsoft; the OAuth client reads this name too).
        var refreshExpiresIn: Int?
        /// Keycloak's name for the same.
        var legacyRefreshExpiresIn: Int?
        var scope: String?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case refreshToken = "refresh_token"
            case idToken = "id_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
            case refreshExpiresIn = "refresh_token_expires_in"
            case legacyRefreshExpiresIn = "refresh_expires_in"
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
