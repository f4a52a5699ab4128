import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A connection to sesamed for Swift programs: typed calls and event streams over its Varlink socket.
public struct SesameClient: Sendable {
    let connection: VarlinkClient

    /// The socket path the daemon was reached at.
    public let socketPath: String

    private init(connection: VarlinkClient, socketPath: String) {
        self.connection = connection
        self.socketPath = socketPath
    }

    /// Connects to sesamed at `socketPath`, or at `defaultSocketPath()` when nil.
    public static func connect(socketPath: String? = nil) async throws -> SesameClient {
        let path = socketPath ?? defaultSocketPath()
        do {
            return SesameClient(connection: try await VarlinkClient.connect(unixSocketPath: path), socketPath: path)
        } catch let error as VarlinkClientError {
            throw SesameError(error)
        }
    }

    /// Where sesamed listens: `$SESAME_SOCKET`; else, for a user other than root whose own
    /// (per-user) daemon is running, `$XDG_RUNTIME_DIR/sesame/io.sesame`; else the system daemon's
    /// `/run/sesame/io.sesame` (`SocketPaths.forClients`, which sesamectl's token shortcut shares).
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String
    {
        SocketPaths.forClients(environment: environment)
    }

    /// What the daemon says about itself and the interfaces it serves.
    public func serviceInfo() async throws -> ServiceInfo {
        try await call(VarlinkServiceContract.getInfo, .init())
    }

    /// The accounts the caller may see.
    public func accounts() async throws -> [Account] {
        try await call(AccountsContract.list, NoParameters()).accounts
    }

    /// One account.
    public func account(_ id: String) async throws -> Account {
        try await call(AccountsContract.get, AccountParameters(account: id)).account
    }

    /// Hands sesamed the tokens of a login the program did itself; returns the account, and
    /// what became of the grant it replaced when it renewed one.
    public func importTokens(
        provider: String,
        subject: String,
        displayName: String? = nil,
        owner: UInt32? = nil,
        tokens: ImportedTokens
    ) async throws -> LoggedIn {
        let parameters = ImportTokensParameters(
            provider: provider,
            subject: subject,
            displayName: displayName,
            owner: owner,
            tokens: tokens
        )
        return try await call(AccountsContract.importTokens, parameters)
    }

    /// A current access token for the account, refreshed by the daemon when needed. With
    /// `scopes` (a subset of those granted), an `audience` or a `resource`, one made for that
    /// alone, which the daemon exchanges for the account's own (RFC 8693) and keeps while it is
    /// good: `narrowingUnsupported` where the provider offers no token exchange,
    /// `narrowingRefused` when it refuses this one.
    public func accessToken(
        for account: String,
        scopes: [String]? = nil,
        audience: String? = nil,
        resource: String? = nil
    ) async throws -> AccessToken {
        let parameters = GetTokenParameters(account: account, scopes: scopes, audience: audience, resource: resource)
        return try await call(AccountsContract.getToken, parameters)
    }

    /// Ends the account's session; returns the account, now logged out, and whether the provider
    /// confirmed the revocation of its grant.
    @discardableResult
    public func logout(_ account: String) async throws -> LogoutResult {
        try await call(AccountsContract.logout, AccountParameters(account: account))
    }

    /// Deletes the account record.
    public func remove(_ account: String) async throws {
        _ = try await call(AccountsContract.remove, AccountParameters(account: account))
    }

    /// Logs an account in with `flow`, or with the flow the provider's file names when `flow` is
    /// nil. Give `redirectURI` (http://127.0.0.1:PORT/... that the caller listens on) unless `flow`
    /// is `.device`. A device login yields `.verification` (show it to the person), then `.done`
    /// once they approved; an authorization-code login yields `.authorization` and ends: send the
    /// browser to its URL and finish with `completeLogin` and the code the redirect carries.
    public func login(
        provider: String,
        flow: LoginFlow? = nil,
        redirectURI: String? = nil,
        scopes: [String]? = nil
    ) async throws -> AsyncThrowingStream<LoginProgress, any Error> {
        let parameters = LoginParameters(provider: provider, flow: flow, redirectUri: redirectURI, scopes: scopes)
        let replies = try await connection.stream(AccountsContract.login, parameters)
        return relay(replies) { LoginProgress(try AccountsContract.login.reply(from: $0)) }
    }

    /// Starts an authorization-code login whose redirect goes to `redirectURI` on 127.0.0.1;
    /// open the returned URL in a browser, then call `completeLogin` with the redirect's code.
    public func startBrowserLogin(provider: String, redirectURI: String, scopes: [String]? = nil) async throws
        -> BrowserAuthorization
    {
        let parameters = LoginParameters(
            provider: provider,
            flow: .authorizationCode,
            redirectUri: redirectURI,
            scopes: scopes
        )
        guard let authorization = try await call(AccountsContract.login, parameters).authorization else {
            throw SesameError.invalidReply("Login answered without an authorization")
        }
        return authorization
    }

    /// Finishes an authorization-code login: the account, and the grant it replaced, if any.
    public func completeLogin(state: String, code: String) async throws -> LoggedIn {
        try await call(AccountsContract.completeLogin, CompleteLoginParameters(state: state, code: code))
    }

    /// The configured providers, and how their accounts log in.
    public func providers() async throws -> [ProviderInfo] {
        try await providerList().providers
    }

    /// The configured providers, and the directory sesamed reads their files from.
    public func providerList() async throws -> ListProvidersReply {
        try await call(AccountsContract.listProviders, NoParameters())
    }

    /// The provider's file checked against the provider: the file's path, and each check's outcome.
    public func checkProvider(_ provider: String) async throws -> CheckProviderReply {
        try await call(AccountsContract.checkProvider, ProviderParameters(provider: provider))
    }

    /// Redeems an authorization code an app or web page obtained (code handover); returns the
    /// account, owned by the caller.
    public func redeemCode(provider: String, _ code: HandedOverCode, displayName: String? = nil) async throws
        -> LoggedIn
    {
        let parameters = RedeemCodeParameters(
            provider: provider,
            code: code.code,
            redirectUri: code.redirectURI,
            codeVerifier: code.codeVerifier,
            state: code.state,
            user: code.user,
            displayName: displayName
        )
        return try await call(AccountsContract.redeemCode, parameters)
    }

    /// Refreshes the account's tokens now.
    public func refresh(_ account: String) async throws -> Account {
        try await call(AccountsContract.refresh, AccountParameters(account: account)).account
    }

    /// Reports that an API rejected `accessToken` (HTTP 401); sesamed refreshes once if it is
    /// still the current one. Returns whether the account now holds another access token.
    public func reportRejected(account: String, accessToken: String) async throws -> Bool {
        let parameters = ReportRejectedParameters(account: account, accessToken: accessToken)
        return try await call(AccountsContract.reportRejected, parameters).refreshed
    }

    /// The account's current ID token, for servers that authenticate with one.
    public func idToken(for account: String) async throws -> GetIDTokenReply {
        try await call(AccountsContract.getIDToken, AccountParameters(account: account))
    }

    /// Gives the account a name to use in place of its id (nil takes it away); names are unique
    /// among the owner's accounts and pick only the caller's own.
    public func rename(_ account: String, to name: String?) async throws -> Account {
        try await call(AccountsContract.rename, RenameParameters(account: account, name: name)).account
    }

    /// Asks the provider, through sesamed, whether it still accepts the account's access token;
    /// a rejected token is refreshed once, as `reportRejected` does.
    public func check(_ account: String) async throws -> CheckReply {
        try await call(AccountsContract.check, AccountParameters(account: account))
    }

    /// Re-seals the token store under a new key (root only); returns the new key id.
    public func rekey() async throws -> String {
        try await call(AdminContract.rekey, NoParameters()).keyId
    }

    /// Subscribes to events. The first element is always `.ready`; with `since`, what was missed
    /// follows (or a `.resync`); the stream ends when the daemon closes the connection.
    public func events(accounts: [String]? = nil, kinds: [AuthEvent.Kind]? = nil, since: UInt64? = nil) async throws
        -> AsyncThrowingStream<SubscriptionUpdate, any Error>
    {
        // Varlink's int is 64-bit signed; a larger `since` means "after everything" all the same.
        let parameters = SubscribeParameters(
            accounts: accounts,
            kinds: kinds,
            since: since.map { min($0, UInt64(Int64.max)) }
        )
        let replies = try await connection.stream(EventsContract.subscribe, parameters)
        return relay(replies) { reply in
            // An event of a kind a later sesamed added is skipped, not taken for a broken reply:
            // a subscriber without a kinds filter is sent every kind there is.
            if case .object(let event)? = reply.parameters["event"], case .string(let kind)? = event["kind"],
                AuthEvent.Kind(rawValue: kind) == nil
            {
                return nil
            }
            return SubscriptionUpdate(try EventsContract.subscribe.reply(from: reply))
        }
    }

    /// Closes the connection.
    public func close() async {
        await connection.close()
    }

    /// The replies of a streaming call as typed values: `read` makes one of a reply, or nil for a
    /// kind of reply this version does not know; error replies end it as `SesameError`.
    func relay<Element: Sendable>(
        _ replies: AsyncThrowingStream<VarlinkReplyMessage, any Error>,
        _ read: @escaping @Sendable (VarlinkReplyMessage) throws -> Element?
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await reply in replies {
                        if let element = try read(reply) { continuation.yield(element) }
                    }
                    continuation.finish()
                } catch let error as VarlinkError {
                    continuation.finish(throwing: SesameError(error))
                } catch let error as VarlinkClientError {
                    continuation.finish(throwing: SesameError(error))
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// One call of `method`, its errors as `SesameError`.
    private func call<Parameters: Encodable & Sendable, Reply: Decodable & Sendable>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ parameters: Parameters
    )
        async throws -> Reply
    {
        do {
            return try await connection.call(method, parameters)
        } catch let error as VarlinkError {
            throw SesameError(error)
        } catch let error as VarlinkClientError {
            throw SesameError(error)
        }
    }
}
