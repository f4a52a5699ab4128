import FoundationEssentials
import Logging
import SesameCore
import SesameProtocol
import SesameProviders
import SesameVarlink

/// `io.sesame.Accounts`: what programs and `sesamectl` ask about and do with accounts. One
/// short handler per method, bound in `handle`; each receives its typed parameters
/// (`AccountsContract`), the caller and the call's context.
struct AccountsInterface: VarlinkInterface {
    let name = AccountsContract.interface
    let interfaceDescription: String
    let engine: DaemonEngine
    let providers: Providers
    let trust: Trust
    let pendingLogins = PendingLogins()
    let tokenReplies = TokenReplies()

    /// List, Get and a GetToken whose token needs no refresh read the engine's published view
    /// without entering it: answered on the connection's loop. Every other call enters the
    /// engine, whose writes seal and fsync the store, and is answered by `handle`.
    func answerAtOnce(_ call: VarlinkCall, context: VarlinkCallContext) throws -> VarlinkReply? {
        // A switch on the name itself: making the method's enum compares the name with every
        // case's in turn (a thousand instructions for GetToken, issue 13).
        switch call.methodName {
        case AccountsContract.Method.list.rawValue: return try list(Caller(context, trust: trust))
        // Their one parameter is read without a decoder: these are the calls made most.
        case AccountsContract.Method.get.rawValue:
            let request = AccountParameters(account: try call.stringParameter("account"))
            return try get(request, Caller(context, trust: trust))
        // Only the account's own token: a narrowed one (more parameters) may need an exchange.
        case AccountsContract.Method.getToken.rawValue where call.parameterCount == 1:
            let caller = Caller(context, trust: trust)
            let (account, tokens) = try usableAccount(try call.stringParameter("account"), caller)
            guard let tokens else { return nil }
            let reply = try tokenReplies.reply(for: account.id, tokens: tokens)
            caller.share?.handedOut("an access token", of: account.id, logger: context.logger)
            return reply
        default: return nil
        }
    }

    /// The method table: every method of the contract, to its handler.
    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        guard let method = AccountsContract.Method(rawValue: call.methodName) else {
            throw VarlinkError.methodNotFound(call.method)
        }
        let caller = Caller(context, trust: trust)
        switch method {
        case .list: return try list(caller)
        case .get: return try get(call.decodeParameters(AccountParameters.self), caller)
        case .importTokens:
            return try await importTokens(call.decodeParameters(ImportTokensParameters.self), caller, context)
        case .login:
            return try await login(call.decodeParameters(LoginParameters.self), more: call.more, caller, context)
        case .completeLogin:
            return try await completeLogin(call.decodeParameters(CompleteLoginParameters.self), caller, context)
        case .listProviders: return try listProviders(caller)
        case .redeemCode: return try await redeemCode(call.decodeParameters(RedeemCodeParameters.self), caller, context)
        case .refresh: return try await refresh(call.decodeParameters(AccountParameters.self), caller)
        case .reportRejected:
            return try await reportRejected(call.decodeParameters(ReportRejectedParameters.self), caller)
        case .check: return try await check(call.decodeParameters(AccountParameters.self), caller, context)
        case .getToken: return try await getToken(call.decodeParameters(GetTokenParameters.self), caller, context)
        case .logout: return try await logout(call.decodeParameters(AccountParameters.self), caller, context)
        case .remove: return try await remove(call.decodeParameters(AccountParameters.self), caller, context)
        case .rename: return try await rename(call.decodeParameters(RenameParameters.self), caller)
        case .getIDToken: return try await getIDToken(call.decodeParameters(AccountParameters.self), caller, context)
        }
    }

    private func list(_ caller: Caller) throws -> VarlinkReply {
        try VarlinkReply(ListReply(accounts: engine.view.list().filter(caller.mayObserve)))
    }

    private func get(_ request: AccountParameters, _ caller: Caller) throws -> VarlinkReply {
        try VarlinkReply(AccountReply(account: try engine.account(request.account, for: caller)))
    }

    private func getToken(_ request: GetTokenParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> VarlinkReply
    {
        guard request.narrowing.isEmpty else { return try await narrowedToken(request, caller, context) }
        // A token that needs no refresh is read without waiting for the engine, which may be
        // busy saving someone else's change; only a refresh (or an error) goes through it.
        let (account, current) = try usableAccount(request.account, caller)
        let tokens: TokenSet
        if let current {
            tokens = current
        } else {
            tokens = try await engine.tokens(for: account.id, waitingAtMost: providers.patience(for: account.provider))
        }
        let reply = try tokenReplies.reply(for: account.id, tokens: tokens)
        caller.share?.handedOut("an access token", of: account.id, logger: context.logger)
        return reply
    }

    /// The account `id` names (its id, else a name of the caller's) if the caller may use its
    /// tokens, with them when they need no refresh: for an id, one lookup of the engine's view,
    /// then the caller's rights on what it found.
    private func usableAccount(_ id: String, _ caller: Caller) throws -> (account: Account, tokens: TokenSet?) {
        let found: (account: Account, tokens: TokenSet?)
        do {
            found = try engine.accountWithTokensWithoutWaiting(id)
        } catch .noSuchAccount {
            // Not an id: a name of the caller's, looked up only when the id is not found, so
            // that the call made most costs no more than before.
            found = try engine.accountWithTokensWithoutWaiting(try engine.view.account(named: id, for: caller).id)
        }
        let (account, tokens) = found
        try caller.check(.use, on: account, namedAs: id)
        return (account, tokens)
    }

    private func logout(_ request: AccountParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> VarlinkReply
    {
        let account = try engine.account(request.account, for: caller, requiring: .logout)
        defer { tokenReplies.forget(account.id) }
        let patience = (try? providers.adapter(account.provider).configuration).map {
            $0.tokenRequestTimeout + $0.requestTimeout
        }
        let (loggedOut, revocation) = try await engine.logout(
            account.id,
            reason: .user,
            waitingAtMost: patience ?? .seconds(10)
        ) { [engine] tokens in
            let revocation = await revokeRemotely(account, tokens: tokens, logger: context.logger)
            // Exchanged tokens are grants of their own at some providers. No exchange starts
            // while the logout runs, and those under way are waited for, so this is all of them.
            for narrowed in await engine.narrowedTokens(of: account.id) {
                _ = await revokeRemotely(account, tokens: narrowed, logger: context.logger)
            }
            return revocation
        }
        context.logger.info(
            "logged out",
            metadata: [
                "account": "\(account.id)", "provider": "\(account.provider)",
                "revoked_remotely": "\(revocation.confirmed)",
                "not_revoked": "\(revocation.reason ?? "-")",
            ]
        )
        return try VarlinkReply(
            LogoutReply(account: loggedOut, revokedRemotely: revocation.confirmed, notRevokedReason: revocation.reason)
        )
    }

    private func refresh(_ request: AccountParameters, _ caller: Caller) async throws -> VarlinkReply {
        let account = try engine.account(request.account, for: caller, requiring: .manage)
        // Refused before the engine is asked: a refresh that cannot happen changes nothing.
        let patience = try providers.adapter(account.provider).configuration.requestTimeout
        try spendProviderCall(caller)
        _ = try await engine.refresh(account.id, waitingAtMost: patience)
        return try VarlinkReply(AccountReply(account: try await engine.account(account.id)))
    }

    private func reportRejected(_ request: ReportRejectedParameters, _ caller: Caller) async throws -> VarlinkReply {
        let account = try engine.account(request.account, for: caller, requiring: .use)
        try spendProviderCall(caller)
        let refreshed = try await engine.refresh(
            account.id,
            ifCurrentAccessToken: request.accessToken,
            waitingAtMost: providers.patience(for: account.provider)
        )
        return try VarlinkReply(ReportRejectedReply(refreshed: refreshed))
    }

    private func rename(_ request: RenameParameters, _ caller: Caller) async throws -> VarlinkReply {
        let account = try engine.account(request.account, for: caller, requiring: .manage)
        return try VarlinkReply(AccountReply(account: try await engine.rename(account.id, to: request.name)))
    }

    /// Counts a call that reaches a provider against the caller's allowance, or refuses it
    /// (`Trust.spendProviderCall`) before anything is asked of the provider.
    func spendProviderCall(_ caller: Caller) throws {
        if let refusal = trust.spendProviderCall(for: caller.peer.uid, at: engine.clock.now) { throw refusal }
    }

    private func remove(_ request: AccountParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> VarlinkReply
    {
        let id = try engine.account(request.account, for: caller, requiring: .manage).id
        defer { tokenReplies.forget(id) }
        try await engine.remove(id)
        context.logger.info("account removed", metadata: ["account": "\(id)"])
        return .empty
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
                metadata: ["account": "\(account.id)", "provider": "\(account.provider)", "error": "\(error)"]
            )
            return RemoteRevocation(confirmed: false, reason: "\(error)")
        }
    }
}
