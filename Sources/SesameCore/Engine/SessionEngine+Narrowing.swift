import FoundationEssentials

extension AuthEvent.Kind {
    /// Whether the account's grant begins or ends with this event, so that tokens obtained
    /// from the one before must not be handed out any more.
    var changesGrant: Bool {
        switch self {
        case .loggedIn, .needsLogin, .loggedOut, .accountRemoved: true
        case .tokenRefreshed, .expiring, .expired, .refreshTokenExpiring, .refreshFailed: false
        }
    }
}

extension SessionEngine {
    /// Whether a narrowed token of `id` for `narrowing` is held and good for longer than the
    /// refresh margin: then asking for it reaches no provider.
    public func holdsNarrowedToken(_ id: String, for narrowing: TokenNarrowing) -> Bool {
        narrowed.usable(.init(account: id, narrowing: narrowing), now: clock.now, margin: policy.refreshMargin) != nil
    }

    /// The narrowed tokens of `id` once the exchanges under way have ended: what a logout
    /// revokes besides the account's own. Called while the logout holds off new exchanges.
    public func narrowedTokens(of id: String) async -> [TokenSet] {
        for exchange in narrowed.inFlight where exchange.key.account == id {
            _ = await exchange.value.task.result
        }
        return narrowed.held(by: id)
    }

    /// Whether the account is in a state whose tokens may be handed out: a refresh under way
    /// leaves the tokens held good.
    private func handsOutTokens(_ id: String) -> Bool {
        guard let state = accounts[id]?.account.state else { return false }
        return state.canRefresh || state == .refreshing
    }

    /// A token of the account narrowed as `narrowing` asks: one held while it is good for longer
    /// than the refresh margin, else one exchanged for the account's current access token
    /// (refreshed first when due). Exchanges are single-flight per account and narrowing; a
    /// caller waits at most `patience`, and the exchange goes on and is kept for the others.
    public func tokens(for id: String, narrowedTo narrowing: TokenNarrowing, waitingAtMost patience: Duration? = nil)
        async throws(SessionError) -> TokenSet
    {
        let key = NarrowedTokens.Key(account: id, narrowing: narrowing)
        if let held = narrowed.usable(key, now: clock.now, margin: policy.refreshMargin) {
            guard handsOutTokens(id) else { throw .needsLogin(id) }
            return held
        }
        guard let task = try await exchangeTask(for: key, waitingAtMost: patience) else {
            // Another caller's exchange ended while this one waited for the account's own token.
            return try await tokens(for: id, narrowedTo: narrowing, waitingAtMost: patience)
        }
        guard let outcome = await TaskDeadline.result(of: task, within: patience, clock: clock) else {
            let waited = patience.map { "\($0.components.seconds) s" } ?? "long enough"
            throw .refreshFailed(account: id, reason: "the provider has not answered within \(waited)")
        }
        switch outcome {
        case .success(let tokens): return tokens
        case .failure(let error as SessionError): throw error
        case .failure: throw .refreshFailed(account: id, reason: "cancelled")
        }
    }

    /// The exchange for `key` under way, started now (from a current access token) if none is;
    /// nil when one ended while this waited for that token, so that what it brought is held.
    /// None starts while the account is being logged out: the logout revokes what is held.
    private func exchangeTask(for key: NarrowedTokens.Key, waitingAtMost patience: Duration?)
        async throws(SessionError) -> Task<TokenSet, any Error>?
    {
        if let running = narrowed.inFlight[key] { return running.task }
        let subject = try await tokens(for: key.account, waitingAtMost: patience)
        // Other callers may have started, or finished, the same exchange while this one waited.
        if let running = narrowed.inFlight[key] { return running.task }
        if narrowed.usable(key, now: clock.now, margin: policy.refreshMargin) != nil { return nil }
        guard let account = accounts[key.account]?.account else { throw .noSuchAccount(key.account) }
        guard refreshState(of: key.account).logouts == 0 else {
            throw .refreshFailed(account: key.account, reason: "the account is being logged out")
        }
        let refresher = self.refresher
        let id = narrowed.nextExchangeID()
        let task = Task<TokenSet, any Error> {
            let outcome: Result<TokenSet, NarrowingError>
            do throws(NarrowingError) {
                outcome = .success(
                    try await refresher.exchange(account, accessToken: subject.accessToken, for: key.narrowing)
                )
            } catch {
                outcome = .failure(error)
            }
            return try self.finishExchange(key, id: id, outcome)
        }
        narrowed.start(task, id: id, for: key)
        return task
    }

    /// Ends the exchange `id` for `key`: its token is kept and handed out unless the account's
    /// grant changed meanwhile, and a failure becomes the callers' error.
    private func finishExchange(_ key: NarrowedTokens.Key, id: UInt64, _ outcome: Result<TokenSet, NarrowingError>)
        throws(SessionError) -> TokenSet
    {
        let account = key.account
        guard narrowed.finish(id, for: key) else {
            throw .refreshFailed(account: account, reason: "the account's login changed while the token was exchanged")
        }
        switch outcome {
        case .success(let tokens):
            narrowed.keep(tokens, for: key, now: clock.now)
            return tokens
        case .failure(.unsupported(let reason)): throw .narrowingUnsupported(account: account, reason: reason)
        case .failure(.refused(let reason)): throw .narrowingRefused(account: account, reason: reason)
        case .failure(.failed(let reason)): throw .refreshFailed(account: account, reason: reason)
        }
    }
}
