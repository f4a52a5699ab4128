import FoundationEssentials

extension SessionEngine {
    /// The tokens the account holds right now, refreshed or not: what a logout revokes.
    public func heldTokens(for id: String) throws(SessionError) -> TokenSet? {
        guard let stored = accounts[id] else { throw .noSuchAccount(id) }
        return stored.tokens
    }

    /// The account's current tokens, refreshed first when the access token expires within the
    /// refresh margin. Refreshes are single-flight: concurrent callers share one refresh. A
    /// caller waits at most `patience` for it (the refresh goes on and is kept when it ends);
    /// a refresh that fails or is still under way never takes away a token that is still
    /// valid: only an expired one turns it into the caller's error.
    public func tokens(for id: String, waitingAtMost patience: Duration? = nil) async throws(SessionError) -> TokenSet {
        guard let stored = accounts[id] else { throw .noSuchAccount(id) }
        switch stored.account.state {
        case .needsLogin, .loggedOut:
            throw .needsLogin(id)
        case .active, .expired, .refreshing:
            break
        }
        guard let tokens = stored.tokens else { throw .needsLogin(id) }
        let refreshDue =
            tokens.accessTokenExpiresAt.map { $0.timeIntervalSince(clock.now) <= policy.refreshMargin.timeInterval }
            ?? false
        // A refresh in flight is joined only by callers whose token is due: the others have a
        // token that is good for longer than the margin, and get it at once.
        guard refreshDue else { return tokens }
        let refreshing = refreshState(of: id)
        guard tokens.refreshToken != nil, refreshing.logouts == 0,
            refreshing.inFlight != nil || !isBackingOff(id) || mayRetryEarly(id, tokens)
        else {
            // Nothing to refresh with, logging out, or backing off after failures: callers get
            // what there is rather than each asking a provider that is struggling.
            if tokens.accessTokenHasExpired(at: clock.now) {
                // Held by the provider's rules: say which and until when, not just "expired".
                if let reason = refreshing.holdReason, let until = refreshing.providerHoldUntil, until > clock.now {
                    throw .refreshFailed(account: id, reason: reason)
                }
                throw .tokenExpired(id)
            }
            return tokens
        }
        do throws(SessionError) {
            if let fresh = try await refresh(id, waitingAtMost: patience) { return fresh }
            let waited = patience.map { "\($0.components.seconds) s" } ?? "long enough"
            let reason = "the provider has not answered within \(waited); the refresh goes on"
            return try validTokens(of: id, orThrow: .refreshFailed(account: id, reason: reason))
        } catch .refreshFailed(let account, let reason) {
            return try validTokens(of: id, orThrow: .refreshFailed(account: account, reason: reason))
        } catch .storeFailed(let reason) {
            return try validTokens(of: id, orThrow: .storeFailed(reason))
        }
    }

    /// The tokens the account holds now, if its access token is still valid; else `error`.
    private func validTokens(of id: String, orThrow error: SessionError) throws(SessionError) -> TokenSet {
        guard let stored = accounts[id], stored.account.state.canRefresh || stored.account.state == .refreshing,
            let tokens = stored.tokens, !tokens.accessTokenHasExpired(at: clock.now)
        else { throw error }
        return tokens
    }

    /// Whether a caller whose token has expired may try a refresh although the backoff after a
    /// failure has not passed: the provider may be back (a person runs `sesamectl token` after
    /// an outage), and such callers together try at most once per
    /// `minimumRejectedRefreshInterval`, so a struggling provider is not hammered. What the
    /// provider asked for itself (Retry-After, RFC 9110 §10.2.3) holds even them.
    private func mayRetryEarly(_ id: String, _ tokens: TokenSet) -> Bool {
        guard tokens.accessTokenHasExpired(at: clock.now) else { return false }
        let state = refreshState(of: id)
        if let hold = state.providerHoldUntil, hold > clock.now { return false }
        guard let last = state.lastAttempt else { return true }
        return clock.now.timeIntervalSince(last) >= policy.minimumRejectedRefreshInterval.timeInterval
    }

    /// Whether the account's last refresh failed and the backoff has not yet passed.
    private func isBackingOff(_ id: String) -> Bool {
        guard let until = refreshState(of: id).retryNotBefore else { return false }
        return until > clock.now
    }

    /// Refreshes the account now (joining a refresh already in flight) and returns the new tokens.
    /// A caller that is cancelled stops waiting; the refresh goes on for the others.
    public func refresh(_ id: String) async throws(SessionError) -> TokenSet {
        // Without a limit the wait ends early only when the caller is cancelled, which throws.
        guard let tokens = try await refresh(id, waitingAtMost: nil) else {
            throw .refreshFailed(account: id, reason: "cancelled")
        }
        return tokens
    }

    /// Refreshes the account now (joining a refresh already in flight), waiting at most
    /// `patience` for it; nil when it is still under way then (it goes on, and its outcome is
    /// kept and announced when it comes).
    public func refresh(_ id: String, waitingAtMost patience: Duration?) async throws(SessionError) -> TokenSet? {
        let task = try refreshTask(for: id)
        guard let outcome = await TaskDeadline.result(of: task, within: patience, clock: clock) else {
            if patience == nil { throw .refreshFailed(account: id, reason: "cancelled") }
            return nil
        }
        return try Self.unwrap(outcome, account: id)
    }

    private static func unwrap(_ outcome: Result<TokenSet, any Error>, account id: String) throws(SessionError)
        -> TokenSet
    {
        switch outcome {
        case .success(let tokens): return tokens
        case .failure(let error as SessionError): throw error
        case .failure: throw .refreshFailed(account: id, reason: "cancelled")
        }
    }

    /// Refreshes the account because a client was refused `accessToken`, but only if that is
    /// still the current token or a refresh is already under way: a hundred clients reporting
    /// the same stale token cause one refresh, not a hundred. Returns whether the account now
    /// holds another access token than the one refused (false when no refresh was possible or
    /// it is still under way after `patience`).
    /// Reports are paced by the token refused, not by the clock: each access token's refusal
    /// leads to one refresh at most (a provider that hands the same token back is not asked
    /// again for it), so a second report of a token costs nothing and a new token's refusal is
    /// acted on at once. A backoff after failures and the provider's own rules still hold.
    public func refresh(_ id: String, ifCurrentAccessToken accessToken: String, waitingAtMost patience: Duration? = nil)
        async throws(SessionError) -> Bool
    {
        guard let stored = accounts[id] else { throw .noSuchAccount(id) }
        if refreshState(of: id).inFlight == nil {
            guard stored.tokens?.accessToken == accessToken, !isBackingOff(id),
                refreshState(of: id).refreshedForRejection != accessToken
            else { return false }
            _ = try refreshTask(for: id)
            updateRefreshState(of: id) { $0.refreshedForRejection = accessToken }
        }
        do throws(SessionError) {
            guard let fresh = try await refresh(id, waitingAtMost: patience) else { return false }
            return fresh.accessToken != accessToken
        } catch {
            // A refresh that failed did not act on the refusal: the next report may try again
            // (the backoff after the failure still paces it).
            updateRefreshState(of: id) { state in
                if state.refreshedForRejection == accessToken { state.refreshedForRejection = nil }
            }
            throw error
        }
    }

    /// The refresh of `id` in flight, started now if none is.
    func refreshTask(for id: String) throws(SessionError) -> Task<TokenSet, any Error> {
        if let running = refreshState(of: id).inFlight { return running.task }
        guard var stored = accounts[id], let tokens = stored.tokens, stored.account.state.canRefresh else {
            throw accounts[id] == nil ? .noSuchAccount(id) : .needsLogin(id)
        }
        guard refreshState(of: id).logouts == 0 else {
            throw .refreshFailed(account: id, reason: "the account is being logged out")
        }
        let startedFrom = stored.account.state
        // `refreshing` is a passing state: shown by List, neither persisted nor announced.
        try transition(&stored, to: .refreshing)
        accounts[id] = stored
        nextRefreshGeneration += 1
        let generation = nextRefreshGeneration
        let account = stored.account
        let refresher = self.refresher
        let task = Task<TokenSet, any Error> {
            let outcome: Result<TokenSet, RefreshError>
            do throws(RefreshError) {
                outcome = .success(try await refresher.refresh(account, tokens: tokens))
            } catch {
                outcome = .failure(error)
            }
            return try self.finishRefresh(id, generation: generation, startedFrom: startedFrom, outcome)
        }
        let now = clock.now
        updateRefreshState(of: id) { state in
            state.inFlight = InFlightRefresh(generation: generation, task: task)
            state.lastAttempt = now
        }
        // The deadline loop leaves accounts alone while they refresh; let it know.
        changes.yield()
        return task
    }

    /// Applies what the provider answered to the account, unless the refresh was overtaken.
    private func finishRefresh(
        _ id: String,
        generation: UInt64,
        startedFrom: SessionState,
        _ outcome: Result<TokenSet, RefreshError>
    ) throws(SessionError) -> TokenSet {
        // Whatever happens below changes the deadlines; wake the loop to look again.
        defer { changes.yield() }
        guard refreshState(of: id).inFlight?.generation == generation else {
            // Overtaken by a logout, removal or new login while the provider answered: its
            // result is void, and callers get what the account holds now.
            guard let stored = accounts[id] else { throw .noSuchAccount(id) }
            let usable = stored.account.state.canRefresh || stored.account.state == .refreshing
            guard usable, let tokens = stored.tokens else { throw .needsLogin(id) }
            if tokens.accessTokenHasExpired(at: clock.now) { throw .tokenExpired(id) }
            return tokens
        }
        updateRefreshState(of: id) { $0.inFlight = nil }
        guard let stored = accounts[id], stored.account.state == .refreshing, let old = stored.tokens else {
            throw .needsLogin(id)
        }
        let refresh = FinishingRefresh(stored: stored, old: old, startedFrom: startedFrom, now: clock.now)
        switch outcome {
        case .success(let fresh):
            return try keepRefreshed(fresh, refresh)
        case .failure(let failure):
            return try recordFailedRefresh(failure, refresh)
        }
    }
}
