import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameCore

/// `sesamectl import PROVIDER --subject S < token-response.json`.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
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
            let input = try StandardInput.read()
            let response: OAuthTokenResponse
            do {
                response = try JSONDecoder().decode(OAuthTokenResponse.self, from: input)
            } catch {
                throw ExitError.message("standard input is not an OAuth token response with an access_token.")
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
                        refreshExpiresIn: (response.refreshTokenExpiresIn ?? response.keycloakRefreshExpiresIn).map(
                            Int64.init
                        ),
                        scopes: response.scopes
                    )
                )
            }
            let account = try await options.naming(imported.account, as: name)
            printLine(json ? try Formatting.json(account) : account.id)
            Formatting.sentence(for: imported.replacedGrant).map(printError)
        }
    }

    /// Redeems the handed-over code read from `source`.
    private func redeem(_ source: String) async throws {
        let input: Data
        if source == "-" {
            input = try StandardInput.read()
        } else {
            guard let data = FileManager.default.contents(atPath: source) else {
                throw ExitError.message("cannot read \(source).")
            }
            input = data
        }
        var handover = try Self.handover(from: input)
        handover.redirectURI = redirectUri ?? handover.redirectURI
        let redeemed = try await options.withClient { client in
            try await client.redeemCode(provider: provider, handover, displayName: displayName)
        }
        let account = try await options.naming(redeemed.account, as: name)
        Formatting.sentence(for: redeemed.replacedGrant).map(printError)
        printLine(
            json ? try Formatting.json(account) : "logged in: \(account.id) (\(Formatting.name(of: account)))"
        )
    }

    /// The bare code, or JSON with `code` and what the authorization request was bound to.
    static func handover(from input: Data) throws -> HandedOverCode {
        let text = String(String(decoding: input, as: UTF8.self).trimmingWhitespace())
        if text.hasPrefix("{") {
            guard let fields = try? JSONDecoder().decode(HandoverFields.self, from: Data(text.utf8)) else {
                throw ExitError.message("the JSON on standard input has no code (or is not JSON).")
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
            throw ExitError.message("standard input holds no authorization code.")
        }
        return HandedOverCode(code: text)
    }
}

/// The JSON an app hands a code over in: the code and what its authorization request was bound to.
private struct HandoverFields: Decodable {
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
