import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameProviders
import SesameVarlink
import SesameWire

/// How accounts come to be: `Login`, `CompleteLogin` and `ImportTokens`.
extension AccountsInterface {
    func login(_ request: LoginParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> LoginReply
    {
        let adapter = try providers.adapter(request.provider)
        let flow = try Self.flow(request.flow, of: adapter)
        // One allowance for both flows: device logins while they poll, code logins while they
        // wait for CompleteLogin; checked before the provider is asked anything.
        let uid = caller.peer.uid
        try spendProviderCall(caller)
        if let refusal = await pendingLogins.reserveLogin(owner: uid, in: trust) { throw refusal }
        defer { trust.release(.login, for: uid) }
        do {
            switch flow {
            case .device:
                guard context.wantsMore else { throw VarlinkError.expectedMore }
                return try await deviceLogin(request, adapter: adapter, owner: uid, context)
            case .authorizationCode:
                // A provider that accepts only its registered redirect gets exactly that one.
                guard let redirect = request.redirectUri, Self.isLoopbackRedirect(redirect),
                    adapter.configuration.redirectURI.map({ $0 == redirect }) ?? true
                else {
                    throw VarlinkError.invalidParameter("redirectUri")
                }
                let started = try await adapter.startAuthorizationCodeLogin(
                    redirectURI: redirect,
                    scopes: request.scopes
                )
                await pendingLogins.add(started, provider: request.provider, adapter: adapter, owner: uid)
                // CompleteLogin comes on the same connection; once it has closed, it never will.
                context.scope.whenClosed { [pendingLogins] in
                    Task { await pendingLogins.cancel(state: started.state) }
                }
                return LoginReply(authorization: Authorization(url: started.url, state: started.state))
            }
        } catch let error as ProviderError {
            Self.log(error, ofLoginWith: request.provider, context: context)
            throw VarlinkLoginError.provider(error)
        }
    }

    /// A device login (RFC 8628): the verification goes out as the first reply, the account as
    /// the last once the person approved.
    private func deviceLogin(
        _ request: LoginParameters,
        adapter: any ProviderAdapter,
        owner: UInt32,
        _ context: VarlinkCallContext
    ) async throws -> LoginReply {
        let authorization = try await adapter.startDeviceLogin(scopes: request.scopes)
        let verification = Verification(
            uri: authorization.verificationURI,
            uriComplete: authorization.verificationURIComplete,
            userCode: authorization.userCode,
            expiresAt: authorization.expiresAt
        )
        try await context.send(VarlinkReply(LoginReply(verification: verification)))
        let polling = DevicePolling(onTrouble: Self.troubleReporter(context)) { [trust, engine] in
            trust.providerCallWait(for: owner, at: engine.clock.now).map { .seconds($0) }
        }
        let login = try await adapter.finishDeviceLogin(authorization, polling: polling)
        let loggedIn = try await store(login, provider: request.provider, adapter: adapter, owner: owner, context)
        return LoginReply(account: loggedIn.account, replacedGrant: loggedIn.replacedGrant)
    }

    func completeLogin(_ request: CompleteLoginParameters, _ caller: Caller, _ context: VarlinkCallContext)
        async throws -> LoggedInReply
    {
        // Counted before the login is taken: a refused call leaves it to be completed later.
        try spendProviderCall(caller)
        guard let pending = await pendingLogins.take(state: request.state, owner: caller.peer.uid) else {
            throw VarlinkLoginError.unknownLogin
        }
        let login: ProviderLogin
        do {
            login = try await pending.adapter.finishAuthorizationCodeLogin(pending.request, code: request.code)
        } catch {
            Self.log(error, ofLoginWith: pending.provider, context: context)
            throw VarlinkLoginError.provider(error)
        }
        return try await store(
            login,
            provider: pending.provider,
            adapter: pending.adapter,
            owner: caller.peer.uid,
            context
        )
    }

    func importTokens(_ request: ImportTokensParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> LoggedInReply
    {
        let owner = request.owner ?? caller.peer.uid
        guard owner == caller.peer.uid || caller.isRoot else { throw VarlinkError.permissionDenied }
        // An account of a provider that is not configured could never refresh or be revoked.
        let adapter = try providers.adapter(request.provider)
        let now = engine.clock.now
        func expiry(_ seconds: Int64?) throws(VarlinkError) -> Date? {
            guard let seconds else { return nil }
            guard seconds > 0 else { throw .invalidParameter("tokens") }
            return now.addingTimeInterval(TimeInterval(seconds))
        }
        let tokens = TokenSet(
            accessToken: request.tokens.accessToken,
            refreshToken: request.tokens.refreshToken,
            idToken: request.tokens.idToken,
            tokenType: request.tokens.tokenType ?? "Bearer",
            accessTokenExpiresAt: try expiry(request.tokens.expiresIn),
            refreshTokenExpiresAt: try expiry(request.tokens.refreshExpiresIn),
            scopes: request.tokens.scopes ?? []
        )
        let session = ImportedSession(
            provider: request.provider,
            subject: request.subject,
            displayName: request.displayName.map(ProviderText.displayName),
            owner: owner,
            tokens: tokens
        )
        let accountLimit = trust.limits.accounts
        try await engine.checkAdmissible(session, accountLimit: accountLimit)
        try spendProviderCall(caller)
        try await Self.verify(tokens, subject: request.subject, with: adapter)
        let outcome = try await engine.logIn(session, accountLimit: accountLimit)
        context.logger.info(
            "tokens imported",
            metadata: ["account": "\(outcome.account.id)", "provider": "\(outcome.account.provider)"]
        )
        return LoggedInReply(outcome)
    }

    /// Tokens handed over must be the provider's, for this client, about `subject`, as far as
    /// the provider can tell (an ID token, or its own token-information API).
    private static func verify(_ tokens: TokenSet, subject: String, with adapter: any ProviderAdapter) async throws {
        do throws(ProviderError) {
            try await adapter.verifyHandedOver(tokens, subject: subject)
        } catch .transient(let reason, _) {
            throw VarlinkLoginError.provider(.transient(reason: reason, retryAfter: .zero))
        } catch .misconfigured(let reason), .untrustedCertificate(let reason) {
            throw VarlinkLoginError.provider(.misconfigured(reason))
        } catch {
            throw SessionError.invalidTokens("the tokens do not check out: \(error)")
        }
    }

    /// Passes device polling's trouble on to the caller as it happens, in replies of their own
    /// (the sentences are fixed ones, never the provider's words); a caller that has gone is
    /// noticed by the server, which cancels the call.
    private static func troubleReporter(_ context: VarlinkCallContext) -> DeviceLoginTrouble.Report {
        { trouble in
            try? await context.send(VarlinkReply(LoginReply(trouble: trouble ?? "")))
        }
    }

    /// Logs how a login ended at the provider, or that its caller cancelled it.
    static func log(_ error: ProviderError, ofLoginWith provider: String, context: VarlinkCallContext) {
        if Task.isCancelled {
            // The caller hung up (Ctrl-C) or sesamed is stopping: nothing failed at the provider.
            context.logger.info("login cancelled by its caller", metadata: ["provider": "\(provider)"])
        } else {
            context.logger.notice("login failed", metadata: ["provider": "\(provider)", "error": "\(error)"])
        }
    }

    /// RFC 8252: the redirect of a native app goes to the loopback interface, on a port the app
    /// chose; anything else could hand the code to someone else.
    static func isLoopbackRedirect(_ uri: String) -> Bool {
        guard let url = URLComponents(string: uri), url.scheme == "http", let host = url.host else { return false }
        return Loopback.isLiteral(host)
    }

    /// Stores a login's account. Tokens that cannot be stored are revoked: the provider issued
    /// them, and nobody would hold them.
    func store(
        _ login: ProviderLogin,
        provider: String,
        adapter: any ProviderAdapter,
        owner: UInt32,
        _ context: VarlinkCallContext
    ) async throws -> LoggedInReply {
        let outcome: LoginOutcome
        do {
            outcome = try await engine.logIn(
                ImportedSession(
                    provider: provider,
                    subject: login.subject,
                    displayName: login.displayName,
                    owner: owner,
                    tokens: login.tokens
                ),
                accountLimit: trust.limits.accounts
            )
        } catch {
            try? await adapter.revoke(login.tokens)
            throw error
        }
        context.logger.info("logged in", metadata: ["account": "\(outcome.account.id)", "provider": "\(provider)"])
        return LoggedInReply(outcome)
    }
}

extension LoggedInReply {
    /// The reply that tells of `outcome`.
    init(_ outcome: LoginOutcome) {
        self.init(
            account: outcome.account,
            replacedGrant: outcome.replacedGrant.map {
                ReplacedGrant(revokedRemotely: $0.confirmed, notRevokedReason: $0.reason, retrying: $0.retrying)
            }
        )
    }
}
