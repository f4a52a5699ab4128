import FoundationEssentials
import SesameClient
import SesameCore
import SesameProtocol

/// What a credential helper asks of sesamed: the current access token of an account, and that
/// an access token was refused. A failure comes back as one sentence that says what to do,
/// for the helper to show the person, never with a token in it.
public struct HelperSession: Sendable {
    /// The daemon's socket; nil for the default (`$SESAME_SOCKET`, the user's, the system's).
    public var socket: String?

    /// A session with the daemon at `socket`.
    public init(socket: String?) {
        self.socket = socket
    }

    /// The account's current access token, refreshed by sesamed when it must be. Asked as
    /// `sesamectl token` asks, by one blocking call: a helper makes one call and exits, and
    /// starting the client's event loop for it would be most of the helper's run. A session that
    /// needs a login is asked again through the client, whose second call names the provider.
    public func token(for account: String) async throws(HelperError) -> AccessToken {
        do {
            return try await Self.oneShotToken(for: account, socket: socket)
        } catch let error as SesameError where error.needsLogin {
            return try await withClient(about: account) { client in try await client.accessToken(for: account) }
        } catch {
            throw HelperError(Self.sentence(for: error))
        }
    }

    /// One blocking GetToken, made on the main thread: a helper's main thread waits for this
    /// one call and has nothing else to do, and no thread of the cooperative pool is held by it.
    @MainActor
    private static func oneShotToken(for account: String, socket: String?) throws -> AccessToken {
        try SesameClient.oneShotAccessToken(for: account, socketPath: socket)
    }

    /// Tells sesamed that a server refused `accessToken` of `account`; sesamed refreshes once
    /// for every program using the account, so the next `token(for:)` gets the new one.
    public func reportRejected(account: String, accessToken: String) async throws(HelperError) {
        _ = try await withClient(about: account) { client in
            try await client.reportRejected(account: account, accessToken: accessToken)
        }
    }

    /// The name (else the id) of the caller's account whose current access token is `secret`,
    /// if one is: what a person who piped `sesamectl token` into `docker login` meant. Accounts
    /// whose token is about to be refreshed are passed over, so that no provider is asked for
    /// the sake of an error message.
    public func account(holding secret: String) async throws(HelperError) -> String? {
        let soon = Date().addingTimeInterval(30)
        return try await withClient { client in
            for account in try await client.accounts()
            where account.state == .active && (account.accessTokenExpiresAt.map { $0 > soon } ?? true) {
                guard let token = try? await client.accessToken(for: account.id) else { continue }
                if token.accessToken == secret { return account.name ?? account.id }
            }
            return nil
        }
    }

    /// Runs `body` on a client; a failure is one sentence, naming the account as the caller did
    /// (`account`, when the call is about one) rather than by sesamed's id for it.
    private func withClient<T: Sendable>(about account: String? = nil, _ body: (SesameClient) async throws -> T)
        async throws(HelperError) -> T
    {
        let client: SesameClient
        do {
            client = try await SesameClient.connect(socketPath: socket)
        } catch {
            throw HelperError(Self.sentence(for: error))
        }
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch let error as SesameError where error.needsLogin {
            let provider = try? await client.account(Self.account(in: error) ?? "").provider
            await client.close()
            throw HelperError(Self.needsLogin(account ?? Self.account(in: error) ?? "the account", provider: provider))
        } catch {
            await client.close()
            throw HelperError(Self.sentence(for: error))
        }
    }

    private static func account(in error: SesameError) -> String? {
        if case .session(.needsLogin(let account)) = error { return account }
        return nil
    }

    private static func needsLogin(_ account: String, provider: String?) -> String {
        guard let provider else { return "\(account) needs a new login: run `sesamectl login` with its provider." }
        return "\(account) needs a new login: run `sesamectl login \(provider)`."
    }

    private static func sentence(for error: any Error) -> String {
        switch error {
        case SesameError.cannotConnect(let path, _): "sesamed is not running (nothing answers at \(path))."
        case SesameError.session(.noSuchAccount(let account)): "no account \(account); see `sesamectl accounts`."
        default: "sesamed: \(error)."
        }
    }
}

/// Why a helper gave no credential, in one sentence for the person.
public struct HelperError: Error, Sendable, CustomStringConvertible {
    /// The sentence.
    public let description: String

    /// A failure that says `sentence`.
    public init(_ sentence: String) {
        description = sentence
    }
}
