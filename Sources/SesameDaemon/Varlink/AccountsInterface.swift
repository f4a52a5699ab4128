import Foundation
import Logging
import SesameCore
import SesameProviders
import SesameVarlink

/// `io.sesame.Accounts`: what programs and `sesamectl` ask about and do with accounts.
struct AccountsInterface: VarlinkInterface {
    let name = "io.sesame.Accounts"
    let interfaceDescription: String
    let engine: DaemonEngine
    let providers: Providers
    let trust: Trust
    let pendingLogins = PendingLogins()

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        let caller = Caller(peer: context.peer, trust: trust)
        switch call.methodName {
        case "List":
            let accounts = await engine.list().filter(caller.mayObserve)
            return try VarlinkReply(AccountsReply(accounts: accounts))
        case "Get":
            let id = try call.decodeParameters(AccountParameter.self).account
            return try VarlinkReply(AccountReply(account: try await engine.account(id, for: caller)))
        case "ImportTokens":
            return try await importTokens(call, caller: caller, context: context)
        case "RedeemCode":
            return try await redeemCode(call, caller: caller, context: context)
        case "ListProviders":
            return try listProviders()
        case "GetToken":
            let id = try call.decodeParameters(AccountParameter.self).account
            let account = try await engine.account(id, for: caller, requiring: .use)
            let tokens = try await engine.tokens(for: id, waitingAtMost: providers.patience(for: account.provider))
            return try VarlinkReply(
                TokenReply(
                    accessToken: tokens.accessToken,
                    tokenType: tokens.tokenType,
                    expiresAt: tokens.accessTokenExpiresAt
                )
            )
        case "Logout":
            let id = try call.decodeParameters(AccountParameter.self).account
            let account = try await engine.account(id, for: caller, requiring: .logout)
            let patience = (try? providers.adapter(account.provider).configuration).map {
                $0.tokenRequestTimeout + $0.requestTimeout
            }
            let (loggedOut, revocation) = try await engine.logout(
                id,
                reason: .user,
                waitingAtMost: patience ?? .seconds(10)
            ) { tokens in
                await revokeRemotely(account, tokens: tokens, logger: context.logger)
            }
            context.logger.info(
                "logged out",
                metadata: [
                    "account": "\(id)", "revoked_remotely": "\(revocation.confirmed)",
                    "not_revoked": "\(revocation.reason ?? "-")",
                ]
            )
            return try VarlinkReply(
                LogoutReply(
                    account: loggedOut,
                    revokedRemotely: revocation.confirmed,
                    notRevokedReason: revocation.reason
                )
            )
        case "Login":
            return try await login(call, caller: caller, context: context)
        case "CompleteLogin":
            let request = try call.decodeParameters(CompleteParameters.self)
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
            return try await accountReply(
                for: login,
                provider: pending.provider,
                adapter: pending.adapter,
                owner: caller.peer.uid,
                context: context
            )
        case "Refresh":
            let id = try call.decodeParameters(AccountParameter.self).account
            let account = try await engine.account(id, for: caller, requiring: .manage)
            // Refused before the engine is asked: a refresh that cannot happen changes nothing.
            let patience = try providers.adapter(account.provider).configuration.requestTimeout
            _ = try await engine.refresh(id, waitingAtMost: patience)
            return try VarlinkReply(AccountReply(account: try await engine.account(id)))
        case "ReportRejected":
            let request = try call.decodeParameters(RejectedParameters.self)
            let account = try await engine.account(request.account, for: caller, requiring: .use)
            let refreshed = try await engine.refresh(
                request.account,
                ifCurrentAccessToken: request.accessToken,
                waitingAtMost: providers.patience(for: account.provider)
            )
            return try VarlinkReply(RejectedReply(refreshed: refreshed))
        case "Remove":
            let id = try call.decodeParameters(AccountParameter.self).account
            _ = try await engine.account(id, for: caller, requiring: .manage)
            try await engine.remove(id)
            context.logger.info("account removed", metadata: ["account": "\(id)"])
            return .empty
        default:
            throw VarlinkError.methodNotFound(call.method)
        }
    }

    private func login(_ call: VarlinkCall, caller: Caller, context: VarlinkCallContext) async throws -> VarlinkReply {
        let request = try call.decodeParameters(LoginParameters.self)
        let adapter = try providers.adapter(request.provider)
        let flow = try Self.flow(request.flow, of: adapter)
        // One allowance for both flows: device logins while they poll, code logins while they
        // wait for CompleteLogin; checked before the provider is asked anything.
        let uid = caller.peer.uid
        if let refusal = await pendingLogins.reserveLogin(owner: uid, in: trust) { throw refusal }
        defer { trust.release(.login, for: uid) }
        do {
            switch flow {
            case .device:
                guard call.more else { throw VarlinkError.expectedMore }
                let authorization = try await adapter.startDeviceLogin(scopes: request.scopes)
                try await context.send(
                    VarlinkReply(
                        VerificationReply(
                            verification: .init(
                                uri: authorization.verificationURI,
                                uriComplete: authorization.verificationURIComplete,
                                userCode: authorization.userCode,
                                expiresAt: authorization.expiresAt
                            )
                        )
                    )
                )
                let login = try await adapter.finishDeviceLogin(authorization)
                return try await accountReply(
                    for: login,
                    provider: request.provider,
                    adapter: adapter,
                    owner: caller.peer.uid,
                    context: context
                )
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
                return try VarlinkReply(
                    AuthorizationReply(authorization: .init(url: started.url, state: started.state))
                )
            }
        } catch let error as ProviderError {
            Self.log(error, ofLoginWith: request.provider, context: context)
            throw VarlinkLoginError.provider(error)
        }
    }

    /// Logs how a login ended at the provider, or that its caller gave up on it.
    static func log(_ error: ProviderError, ofLoginWith provider: String, context: VarlinkCallContext) {
        if Task.isCancelled {
            // The caller hung up (Ctrl-C) or sesamed is stopping: nothing failed at the provider.
            context.logger.info("login abandoned by its caller", metadata: ["provider": "\(provider)"])
        } else {
            context.logger.notice("login failed", metadata: ["provider": "\(provider)", "error": "\(error)"])
        }
    }

    /// RFC 8252: the redirect of a native app goes to the loopback interface, on a port the app
    /// chose; anything else could hand the code to someone else.
    static func isLoopbackRedirect(_ uri: String) -> Bool {
        guard let url = URLComponents(string: uri), url.scheme == "http", let host = url.host else { return false }
        return host == "127.0.0.1" || host == "[::1]" || host == "::1"
    }

    /// Stores a login's account. Tokens that cannot be stored are revoked: the provider issued
    /// them, and nobody would hold them.
    func accountReply(
        for login: ProviderLogin,
        provider: String,
        adapter: any ProviderAdapter,
        owner: UInt32,
        context: VarlinkCallContext
    ) async throws -> VarlinkReply {
        let account: Account
        do {
            account = try await engine.importSession(
                ImportedSession(
                    provider: provider,
                    subject: login.subject,
                    displayName: login.displayName,
                    owner: owner,
                    tokens: login.tokens
                )
            )
        } catch {
            try? await adapter.revoke(login.tokens)
            throw error
        }
        context.logger.info("logged in", metadata: ["account": "\(account.id)", "provider": "\(provider)"])
        return try VarlinkReply(AccountReply(account: account))
    }

    /// Revokes the account's grant at its provider, and says whether the provider confirmed it
    /// and if not, why (no provider, no revocation endpoint, the provider could not be reached).
    private func revokeRemotely(_ account: Account, tokens: TokenSet, logger: Logger) async -> RemoteRevocation {
        guard let adapter = try? providers.adapter(account.provider) else {
            return RemoteRevocation(
                confirmed: false,
                reason: "provider '\(account.provider)' is not configured, so it was not asked"
            )
        }
        do {
            try await adapter.revoke(tokens)
            return RemoteRevocation(confirmed: true)
        } catch {
            logger.warning(
                "could not revoke at the provider; wiping the tokens here anyway",
                metadata: ["account": "\(account.id)", "error": "\(error)"]
            )
            return RemoteRevocation(confirmed: false, reason: "\(error)")
        }
    }

    private func importTokens(_ call: VarlinkCall, caller: Caller, context: VarlinkCallContext) async throws
        -> VarlinkReply
    {
        let request = try call.decodeParameters(ImportParameters.self)
        let owner = request.owner ?? caller.peer.uid
        guard owner == caller.peer.uid || caller.isRoot else { throw VarlinkError.permissionDenied }
        // An account of a provider that is not configured could never refresh or be revoked.
        let adapter = try providers.adapter(request.provider)
        let now = Date()
        let expiry = try request.tokens.expiresIn.map { seconds throws(VarlinkError) -> Date in
            guard seconds > 0 else { throw .invalidParameter("tokens") }
            return now.addingTimeInterval(TimeInterval(seconds))
        }
        let refreshExpiry = try request.tokens.refreshExpiresIn.map { seconds throws(VarlinkError) -> Date in
            guard seconds > 0 else { throw .invalidParameter("tokens") }
            return now.addingTimeInterval(TimeInterval(seconds))
        }
        let tokens = TokenSet(
            accessToken: request.tokens.accessToken,
            refreshToken: request.tokens.refreshToken,
            idToken: request.tokens.idToken,
            tokenType: request.tokens.tokenType ?? "Bearer",
            accessTokenExpiresAt: expiry,
            refreshTokenExpiresAt: refreshExpiry,
            scopes: request.tokens.scopes ?? []
        )
        try await Self.verify(tokens, subject: request.subject, with: adapter)
        let account = try await engine.importSession(
            ImportedSession(
                provider: request.provider,
                subject: request.subject,
                displayName: request.displayName.map(Self.shown),
                owner: owner,
                tokens: tokens
            )
        )
        context.logger.info(
            "tokens imported",
            metadata: ["account": "\(account.id)", "provider": "\(account.provider)"]
        )
        return try VarlinkReply(AccountReply(account: account))
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
}
