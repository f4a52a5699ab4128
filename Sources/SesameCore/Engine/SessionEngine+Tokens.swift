import Foundation

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
            if tokens.accessTokenHasExpired(at: clock.now) { throw .tokenExpired(id) }
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
    /// It also refreshes at most once per `minimumRejectedRefreshInterval` and not while backing
    /// off, so a client that is refused for another reason cannot make the daemon hammer the
    /// provider.
    public func refresh(_ id: String, ifCurrentAccessToken accessToken: String, waitingAtMost patience: Duration? = nil)
        async throws(SessionError) -> Bool
    {
        guard let stored = accounts[id] else { throw .noSuchAccount(id) }
        if refreshState(of: id).inFlight == nil {
            guard stored.tokens?.accessToken == accessToken, !isBackingOff(id) else { return false }
            if let last = refreshState(of: id).lastAttempt,
                clock.now.timeIntervalSince(last) < policy.minimumRejectedRefreshInterval.timeInterval
            {
                return false
            }
        }
        guard let fresh = try await refresh(id, waitingAtMost: patience) else { return false }
        return fresh.accessToken != accessToken
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
            let outcome: Result<TokenSet, RefreshFailure>
            do throws(RefreshFailure) {
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
        _ outcome: Result<TokenSet, RefreshFailure>
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

    /// A refresh whose answer is being applied: the account as it was, and when.
    private struct FinishingRefresh {
        var stored: StoredAccount
        var old: TokenSet
        var startedFrom: SessionState
        var now: Date
        var id: String { stored.account.id }
        /// The access token ran out while the provider was asked; say so, as the deadline would have.
        var expiryAnnouncement: [Announcement] {
            startedFrom == .active && old.accessTokenHasExpired(at: now)
                ? [Announcement(kind: .expired, account: id)] : []
        }
        /// Where the account goes back to when the refresh brought no new tokens.
        var unchangedState: SessionState { old.accessTokenHasExpired(at: now) ? .expired : .active }
    }

    /// Makes the new tokens the account's. What the answer leaves out is what the account held
    /// (RFC 6749 §6: the refresh token stays when no new one is issued).
    private func keepRefreshed(_ received: TokenSet, _ refresh: FinishingRefresh) throws(SessionError) -> TokenSet {
        var (stored, old) = (refresh.stored, refresh.old)
        var fresh = AccountFieldLimits.bounded(received, keeping: old)
        if fresh.refreshToken == nil { fresh.refreshToken = old.refreshToken }
        if fresh.refreshTokenExpiresAt == nil && fresh.refreshToken == old.refreshToken {
            fresh.refreshTokenExpiresAt = old.refreshTokenExpiresAt
        }
        if fresh.idToken == nil { fresh.idToken = old.idToken }
        if fresh.scopes.isEmpty { fresh.scopes = old.scopes }
        try transition(&stored, to: .active)
        stored.tokens = fresh
        stored.expiringAnnounced = false
        stored.refreshAt = policy.refreshTime(for: fresh, obtainedAt: refresh.now)
        stored.account.scopes = fresh.scopes
        stored.account.accessTokenExpiresAt = fresh.accessTokenExpiresAt
        stored.account.refreshTokenExpiresAt = fresh.refreshTokenExpiresAt
        forgetFailures(refresh.id)
        let announcement = Announcement(kind: .tokenRefreshed, account: refresh.id, snapshot: stored.account)
        do {
            try commit([refresh.id: stored], announcing: [announcement])
        } catch {
            // The provider may have rotated the refresh token, and these are the only copy:
            // dropping them would end the session. They stay here, and the next save
            // (retried by the deadline loop) persists them and then announces the refresh.
            accounts[refresh.id] = stored
            unsavedAccounts.insert(refresh.id)
            unsavedAnnouncements = (unsavedAnnouncements ?? []) + [announcement]
            throw error
        }
        return fresh
    }

    /// Records a refresh that brought no new tokens, and what it means for the session.
    private func recordFailedRefresh(_ failure: RefreshFailure, _ refresh: FinishingRefresh) throws(SessionError)
        -> TokenSet
    {
        var (stored, id) = (refresh.stored, refresh.id)
        switch failure {
        case .transient(let reason, let retryAfter):
            try transition(&stored, to: refresh.unchangedState)
            let (failures, retryAt) = backOff(id, atLeast: retryAfter)
            holdForProvider(
                id,
                until: clock.now.addingTimeInterval(min(retryAfter, policy.maximumRetryDelay).timeInterval)
            )
            stored.refreshAt = retryAt
            let failed = Announcement(kind: .refreshFailed, account: id, retryAt: retryAt, detail: reason)
            try commitOrRestore(&stored, startedFrom: refresh.startedFrom, refresh.expiryAnnouncement + [failed])
            updateRefreshState(of: id) { $0.failures = failures }
            throw .refreshFailed(account: id, reason: reason)
        case .unavailable:
            try transition(&stored, to: refresh.unchangedState)
            stored.refreshAt = nil
            try commitOrRestore(&stored, startedFrom: refresh.startedFrom, refresh.expiryAnnouncement)
            if refresh.old.accessTokenHasExpired(at: refresh.now) { throw .tokenExpired(id) }
            return refresh.old
        case .paced(let until, let reason):
            try recordPacedRefresh(until: until, reason: reason, refresh)
        case .invalidResponse(let reason):
            // Garbage from the provider changes nothing about the session: the account goes back
            // to where it was (a planned refresh tries again after the backoff).
            try transition(&stored, to: refresh.unchangedState)
            let (failures, retryAt) = backOff(id, atLeast: .seconds(30))
            stored.refreshAt = stored.refreshAt.map { _ in retryAt }
            try commitOrRestore(&stored, startedFrom: refresh.startedFrom, refresh.expiryAnnouncement)
            updateRefreshState(of: id) { $0.failures = failures }
            throw .refreshFailed(account: id, reason: reason)
        case .needsLogin(let reason):
            try transition(&stored, to: .needsLogin)
            stored.tokens?.refreshToken = nil
            stored.refreshAt = nil
            let announcement = Announcement(kind: .needsLogin, account: id, detail: reason)
            try commitOrRestore(&stored, startedFrom: refresh.startedFrom, refresh.expiryAnnouncement + [announcement])
            forgetFailures(id)
            throw .needsLogin(id)
        case .revoked(let reason):
            try transition(&stored, to: .needsLogin)
            try transition(&stored, to: .loggedOut)
            stored.tokens = nil
            stored.account.accessTokenExpiresAt = nil
            stored.account.refreshTokenExpiresAt = nil
            let announcements = [
                Announcement(kind: .needsLogin, account: id, detail: reason),
                Announcement(kind: .loggedOut, account: id, reason: .revoked, revokedRemotely: true),
            ]
            try commitOrRestore(&stored, startedFrom: refresh.startedFrom, announcements)
            forgetFailures(id)
            throw .needsLogin(id)
        }
    }

    /// Records a refresh the provider's own rules held back until `until`. Not a failure: no
    /// event, and the planned refresh waits until it is allowed; the caller is told why.
    private func recordPacedRefresh(until: Date, reason: String, _ refresh: FinishingRefresh) throws(SessionError)
        -> Never
    {
        var stored = refresh.stored
        try transition(&stored, to: refresh.unchangedState)
        stored.refreshAt = stored.refreshAt.map { _ in until }
        updateRefreshState(of: refresh.id) { $0.retryNotBefore = until }
        holdForProvider(refresh.id, until: until)
        try commitOrRestore(&stored, startedFrom: refresh.startedFrom, refresh.expiryAnnouncement)
        throw .refreshFailed(account: refresh.id, reason: reason)
    }

    /// Counts one more failed refresh of `id` and holds callers off until the retry it returns.
    /// The count itself is kept by the caller once the failure is committed.
    private func backOff(_ id: String, atLeast: Duration) -> (failures: Int, retryAt: Date) {
        let failures = refreshState(of: id).failures + 1
        let retryAt = clock.now.addingTimeInterval(policy.retryDelay(afterFailures: failures, atLeast: atLeast))
        updateRefreshState(of: id) { $0.retryNotBefore = retryAt }
        return (failures, retryAt)
    }

    /// Holds every caller of `id`, early retries included, until `until`, as the provider asked.
    private func holdForProvider(_ id: String, until: Date) {
        updateRefreshState(of: id) { $0.providerHoldUntil = until }
    }

    /// Commits a refresh outcome; if saving fails, the account leaves `refreshing` for the state
    /// it had before, unannounced, so it is never stuck mid-refresh, and the planned refresh
    /// waits a minute rather than hammer the provider while the store is failing.
    private func commitOrRestore(
        _ stored: inout StoredAccount,
        startedFrom: SessionState,
        _ announcements: [Announcement]
    ) throws(SessionError) {
        let id = stored.account.id
        do {
            try commit([id: stored], announcing: announcements)
        } catch {
            if var current = accounts[id], current.account.state == .refreshing {
                // Back to where it was, so that a deadline passed meanwhile (expired) is still
                // announced by the deadline loop once the store takes it.
                current.account.state = startedFrom
                current.refreshAt = current.refreshAt.map { _ in clock.now.addingTimeInterval(60) }
                let retryAt = clock.now.addingTimeInterval(60)
                updateRefreshState(of: id) { $0.retryNotBefore = retryAt }
                accounts[id] = current
                unsavedAccounts.insert(id)
            }
            throw error
        }
    }
}
