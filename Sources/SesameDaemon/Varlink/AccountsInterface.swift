import FoundationEssentials
import Logging
import SesameCore
import SesameProtocol
import SesameProviders
import SesameVarlink

/// `io.sesame.Accounts`: what programs and `sesamectl` ask about and do with accounts. One
/// short handler per method, bound in `methods`; each receives its typed parameters
/// (`AccountsContract`), the caller and the call's context.
struct AccountsInterface: VarlinkInterface {
    let name = AccountsContract.interface
    let interfaceDescription: String
    let engine: DaemonEngine
    let providers: Providers
    let trust: Trust
    let pendingLogins = PendingLogins()
    let tokenReplies = TokenReplies()

    /// The method table. List, Get and a GetToken whose token needs no refresh read the
    /// engine's published view without entering it: answered on the connection's loop. Every
    /// other call enters the engine, whose writes seal and fsync the store, and is answered off it.
    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.onLoop(AccountsContract.list) { context in try list(Caller(context, trust: trust)) }
        // Get's and GetToken's one parameter is read without a decoder: these are the calls made most.
        methods.answer(AccountsContract.get, atOnce: { call, context in try VarlinkAnswer(get(call, context)) }) {
            request,
            context in
            try VarlinkAnswer(get(request, Caller(context, trust: trust)))
        }
        methods.answer(AccountsContract.getToken, atOnce: tokenAtOnce) { request, context in
            try await getToken(request, Caller(context, trust: trust), context)
        }
        methods.on(AccountsContract.importTokens) { try await importTokens($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.login) { try await login($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.completeLogin) { try await completeLogin($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.listProviders) { _, context in try listProviders(Caller(context, trust: trust)) }
        methods.on(AccountsContract.checkProvider) { try await checkProvider($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.redeemCode) { try await redeemCode($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.refresh) { try await refresh($0, Caller($1, trust: trust)) }
        methods.on(AccountsContract.reportRejected) { try await reportRejected($0, Caller($1, trust: trust)) }
        methods.on(AccountsContract.check) { try await check($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.logout) { try await logout($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.remove) { try await remove($0, Caller($1, trust: trust), $1) }
        methods.on(AccountsContract.rename) { try await rename($0, Caller($1, trust: trust)) }
        methods.on(AccountsContract.getIDToken) { try await getIDToken($0, Caller($1, trust: trust), $1) }
        return methods
    }

    /// `Get`, its one parameter read without a decoder.
    private func get(_ call: VarlinkCall, _ context: VarlinkCallContext) throws -> AccountReply {
        try get(AccountParameters(account: try call.stringParameter("account")), Caller(context, trust: trust))
    }

    /// A `GetToken` for the account's own token (a narrowed one, with more parameters, may need
    /// an exchange) when that token needs no refresh; nil leaves the call to `getToken`.
    private func tokenAtOnce(_ call: VarlinkCall, _ context: VarlinkCallContext) throws
        -> VarlinkAnswer<GetTokenReply>?
    {
        guard call.parameterCount == 1 else { return nil }
        let caller = Caller(context, trust: trust)
        let (account, tokens) = try usableAccount(try call.stringParameter("account"), caller)
        guard let tokens else { return nil }
        let reply = try tokenReplies.reply(for: account.id, tokens: tokens)
        caller.share?.handedOut("an access token", of: account.id, logger: context.logger)
        return reply
    }

    private func list(_ caller: Caller) throws -> ListReply {
        ListReply(accounts: engine.view.list().filter(caller.mayObserve))
    }

    private func get(_ request: AccountParameters, _ caller: Caller) throws -> AccountReply {
        AccountReply(account: try engine.account(request.account, for: caller))
    }

    private func getToken(_ request: GetTokenParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> VarlinkAnswer<GetTokenReply>
    {
        guard request.narrowing.isEmpty else { return try VarlinkAnswer(await narrowedToken(request, caller, context)) }
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
        -> LogoutReply
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
        return LogoutReply(
            account: loggedOut,
            revokedRemotely: revocation.confirmed,
            notRevokedReason: revocation.reason
        )
    }

    private func refresh(_ request: AccountParameters, _ caller: Caller) async throws -> AccountReply {
        let account = try engine.account(request.account, for: caller, requiring: .manage)
        // Refused before the engine is asked: a refresh that cannot happen changes nothing.
        let patience = try providers.adapter(account.provider).configuration.requestTimeout
        try spendProviderCall(caller)
        _ = try await engine.refresh(account.id, waitingAtMost: patience)
        return AccountReply(account: try await engine.account(account.id))
    }

    private func reportRejected(_ request: ReportRejectedParameters, _ caller: Caller) async throws
        -> ReportRejectedReply
    {
        let account = try engine.account(request.account, for: caller, requiring: .use)
        try spendProviderCall(caller)
        let refreshed = try await engine.refresh(
            account.id,
            ifCurrentAccessToken: request.accessToken,
            waitingAtMost: providers.patience(for: account.provider)
        )
        return ReportRejectedReply(refreshed: refreshed)
    }

    private func rename(_ request: RenameParameters, _ caller: Caller) async throws -> AccountReply {
        let account = try engine.account(request.account, for: caller, requiring: .manage)
        // Each rename is a durable write of the account, whose tokens may be 64 KiB each.
        if let refusal = trust.spendChange(for: caller.peer.uid, at: engine.clock.now) { throw refusal }
        return AccountReply(account: try await engine.rename(account.id, to: request.name))
    }

    /// Counts a call that reaches a provider against the caller's allowance, or refuses it
    /// (`Trust.spendProviderCall`) before anything is asked of the provider.
    func spendProviderCall(_ caller: Caller) throws {
        if let refusal = trust.spendProviderCall(for: caller.peer.uid, at: engine.clock.now) { throw refusal }
    }

    private func remove(_ request: AccountParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> NoParameters
    {
        let id = try engine.account(request.account, for: caller, requiring: .manage).id
        defer { tokenReplies.forget(id) }
        try await engine.remove(id)
        context.logger.info("account removed", metadata: ["account": "\(id)"])
        return NoParameters()
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
