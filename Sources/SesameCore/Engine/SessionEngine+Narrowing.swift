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

    /// The narrowed tokens of `id` held now: what a logout revokes besides the account's own.
    public func narrowedTokens(of id: String) -> [TokenSet] {
        narrowed.held(by: id)
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
            guard accounts[id]?.account.state.canRefresh ?? false else { throw .needsLogin(id) }
            return held
        }
        let task = try await exchangeTask(for: key, waitingAtMost: patience)
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

    /// The exchange for `key` under way, started now (from a current access token) if none is.
    private func exchangeTask(for key: NarrowedTokens.Key, waitingAtMost patience: Duration?)
        async throws(SessionError) -> Task<TokenSet, any Error>
    {
        if let running = narrowed.inFlight[key] { return running.task }
        let subject = try await tokens(for: key.account, waitingAtMost: patience)
        // Another caller may have started the same exchange while this one waited.
        if let running = narrowed.inFlight[key] { return running.task }
        guard let account = accounts[key.account]?.account else { throw .noSuchAccount(key.account) }
        let refresher = self.refresher
        let id = narrowed.nextExchangeID()
        let task = Task<TokenSet, any Error> {
            let outcome: Result<TokenSet, NarrowingFailure>
            do throws(NarrowingFailure) {
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
    private func finishExchange(_ key: NarrowedTokens.Key, id: UInt64, _ outcome: Result<TokenSet, NarrowingFailure>)
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
