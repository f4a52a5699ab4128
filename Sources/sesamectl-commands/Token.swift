import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameCore
import SesameWire

/// `sesamectl token ACCOUNT`: a current access token (or ID token), for scripts and for the
/// tools that run a command to get one (kubectl's exec plugins).
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a current access token of an account (refreshed by sesamed when needed).",
        discussion: """
            Only the token is printed, so `curl -H "Authorization: Bearer $(sesamectl token ID)"` works. \
            --format exec-credential prints a client.authentication.k8s.io ExecCredential for \
            kubectl's exec plugins (users[].user.exec: command sesamectl, args token NAME --format \
            exec-credential); with --id-token, the account's ID token instead, for API servers \
            that authenticate with OpenID Connect. --scope, --audience and --resource ask for a \
            token made for that alone, which sesamed exchanges for the account's own (OAuth 2.0 \
            Token Exchange, RFC 8693) where the provider offers it; the account's grant is not \
            narrowed by it.
            """
    )

    /// How the token is printed.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case plain, json
        case execCredential = "exec-credential"
    }

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The account (its id or name; see `sesamectl accounts`).", completion: .accountIDs)
    var account: String

    @Flag(name: .long, help: "Print {accessToken, tokenType, expiresAt} as JSON (as --format json).")
    var json = false

    @Option(name: .long, help: "plain (the token alone), json, or exec-credential (kubectl's).")
    var format: Format?

    @Flag(name: .long, help: "The account's ID token instead of its access token.")
    var idToken = false

    @Option(
        name: .customLong("scope"),
        help: ArgumentHelp(
            "A token with only this scope (repeat for more; a subset of those granted).",
            valueName: "SCOPE"
        )
    )
    var scopes: [String] = []

    @Option(help: ArgumentHelp("A token for this service (RFC 8693 audience).", valueName: "NAME"))
    var audience: String?

    @Option(help: ArgumentHelp("A token for this resource (an absolute URI, RFC 8707).", valueName: "URI"))
    var resource: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Refresh first when the token would expire within SECONDS (as far as the provider's token lifetime allows).",
            valueName: "SECONDS"
        )
    )
    var minValid: UInt32?

    @Flag(
        name: .long,
        help: """
            The token was refused by the API it was sent to (HTTP 401): sesamed refreshes once, for \
            every program that uses the account, and the new token is printed. The refused token is \
            $SESAME_ACCESS_TOKEN when set (as `sesamectl exec` sets it), else the current one.
            """
    )
    var rejected = false

    func validate() throws {
        if json, let format, format != .json { throw ValidationError("--json and --format \(format.rawValue) differ.") }
        if idToken, rejected || minValid != nil {
            throw ValidationError("--id-token goes with neither --rejected nor --min-valid.")
        }
        if isNarrowed, idToken || rejected || minValid != nil {
            throw ValidationError(
                "--scope, --audience and --resource go with neither --id-token, --rejected nor --min-valid."
            )
        }
    }

    func run() async throws {
        try await reportingFailures(about: account, at: options.socket) {
            let shown: (token: String, expiresAt: Date?, json: String)
            if let reply = try await oneShotAccessToken() {
                shown = (reply.accessToken, reply.expiresAt, try Formatting.json(reply))
            } else {
                shown = try await options.withClient(about: account) { client in
                    if idToken {
                        let reply = try await client.idToken(for: account)
                        return (reply.idToken, reply.expiresAt, try Formatting.json(reply))
                    }
                    let reply = try await accessToken(client)
                    return (reply.accessToken, reply.expiresAt, try Formatting.json(reply))
                }
            }
            switch format ?? (json ? .json : .plain) {
            case .plain: printLine(shown.token)
            case .json: printLine(shown.json)
            case .execCredential: printLine(try ExecCredential.json(token: shown.token, expiresAt: shown.expiresAt))
            }
        }
    }

    /// The access token by one blocking GetToken (`oneShotAccessToken`), without the event loop
    /// the other verbs start: for the forms sesamectl's own shortcut leaves to this program
    /// (`--json`, `--format`, a narrowed token), and for a shortcut's GetToken that failed. Nil
    /// when this run needs more (an ID token, a refused token, a refresh for --min-valid) or
    /// sesamed answered with an error that the full path words (a login needed names its
    /// provider, which takes another call).
    private func oneShotAccessToken() async throws -> AccessToken? {
        guard !idToken, !rejected else { return nil }
        let token: AccessToken
        do {
            token = try await Self.blockingGetToken(
                account,
                scopes: scopes.isEmpty ? nil : scopes,
                audience: audience,
                resource: resource,
                socket: options.socket
            )
        } catch let error as SesameError where error.needsLogin {
            return nil
        } catch let error as SesameError {
            throw GlobalOptions.explained(error)
        }
        if let minValid, let expiry = token.expiresAt, expiry < Date().addingTimeInterval(TimeInterval(minValid)) {
            return nil
        }
        return token
    }

    /// The one blocking GetToken, made on the main thread: it has nothing else to do while this
    /// run waits for it, and no thread of the cooperative pool is held by it.
    @MainActor
    private static func blockingGetToken(
        _ account: String,
        scopes: [String]?,
        audience: String?,
        resource: String?,
        socket: String?
    ) throws -> AccessToken {
        try SesameClient.oneShotAccessToken(
            for: account,
            scopes: scopes,
            audience: audience,
            resource: resource,
            socketPath: socket
        )
    }

    /// Whether a token made for less than the account's grant is asked for.
    private var isNarrowed: Bool { !scopes.isEmpty || audience != nil || resource != nil }

    private func accessToken(_ client: SesameClient) async throws -> AccessToken {
        if isNarrowed {
            return try await client.accessToken(
                for: account,
                scopes: scopes.isEmpty ? nil : scopes,
                audience: audience,
                resource: resource
            )
        }
        if rejected { return try await Self.replacing(account, client) }
        let token = try await client.accessToken(for: account)
        guard let minValid, let expiry = token.expiresAt, expiry < Date().addingTimeInterval(TimeInterval(minValid))
        else { return token }
        do {
            _ = try await client.refresh(account)
        } catch SesameError.session(.refreshFailed(_, let reason)) where expiry > Date() {
            // The token held is still good: say why no longer-lived one came, not "expired".
            throw ExitError.message(
                "no token of \(account) valid for \(minValid) s: \(reason); the current one is good until "
                    + "\(expiry.formatted(.iso8601)) (without --min-valid it is printed)."
            )
        }
        let fresh = try await client.accessToken(for: account)
        if let end = fresh.expiresAt, end < Date().addingTimeInterval(TimeInterval(minValid)) {
            // The freshest token there is still goes out (a script needs one); stderr says why it
            // falls short rather than calling it expired.
            let lifetime = Int(end.timeIntervalSinceNow.rounded(.down))
            printError(
                "note: \(account)'s provider gives tokens that live \(lifetime) s at most, less than "
                    + "--min-valid \(minValid); this one was just renewed."
            )
        }
        return fresh
    }
}

extension Token {
    /// The token that replaces the one an API refused: `$SESAME_ACCESS_TOKEN` when set (what
    /// `sesamectl exec` gave the command, so the very token that was used), else the current
    /// one. A token that was replaced meanwhile is not reported, so no refresh is spent on the
    /// good one. Only a refresh the provider granted counts: handing out the refused token again
    /// would loop the caller.
    static func replacing(
        _ account: String,
        _ client: SesameClient,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> AccessToken {
        let current = try await client.accessToken(for: account)
        let refused = environment["SESAME_ACCESS_TOKEN"].flatMap { $0.isEmpty ? nil : $0 } ?? current.accessToken
        if refused != current.accessToken { return current }
        guard try await client.reportRejected(account: account, accessToken: refused) else {
            let now = try await client.account(account)
            if now.state == .needsLogin { throw ExitError.needsLogin(account: account, provider: now.provider) }
            throw ExitError.noNewToken(account: account)
        }
        return try await client.accessToken(for: account)
    }
}

/// kubectl's `ExecCredential` (client.authentication.k8s.io), what an exec plugin prints.
struct ExecCredential: Encodable {
    /// The credential's `status`: the token, and when kubectl is to run the plugin again.
    struct Status: Encodable {
        var expirationTimestamp: String?
        var token: String
    }

    var apiVersion: String
    var kind = "ExecCredential"
    var status: Status

    /// The credential for `token`, in the API version kubectl asked for in `KUBERNETES_EXEC_INFO`
    /// (v1 when it says none). With `expirationTimestamp`, kubectl runs the plugin again once
    /// the token has expired instead of sending it.
    static func json(
        token: String,
        expiresAt: Date?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> String {
        let credential = ExecCredential(
            apiVersion: apiVersion(environment),
            status: Status(expirationTimestamp: expiresAt?.formatted(.iso8601), token: token)
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(credential), as: UTF8.self)
    }

    /// The one member of `KUBERNETES_EXEC_INFO` read here.
    private struct ExecInfo: Decodable {
        var apiVersion: String?
    }

    private static func apiVersion(_ environment: [String: String]) -> String {
        let asked = environment["KUBERNETES_EXEC_INFO"].flatMap {
            try? JSONDecoder().decode(ExecInfo.self, from: Data($0.utf8)).apiVersion
        }
        let known = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]
        return asked.flatMap { known.contains($0) ? $0 : nil } ?? known[0]
    }
}
