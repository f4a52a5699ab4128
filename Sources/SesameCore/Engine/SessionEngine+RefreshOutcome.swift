import FoundationEssentials

/// What a refresh's answer does to the account: new tokens kept (or held in memory when the
/// store fails, since a rotated refresh token may be the only copy), or the failure recorded as
/// what it means for the session, with the backoff and the provider's own holds.
extension SessionEngine {
    /// A refresh whose answer is being applied: the account as it was, and when.
    struct FinishingRefresh {
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
    func keepRefreshed(_ received: TokenSet, _ refresh: FinishingRefresh) throws(SessionError) -> TokenSet {
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
    func recordFailedRefresh(_ failure: RefreshError, _ refresh: FinishingRefresh) throws(SessionError)
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
        case .needsLogin(let reason), .revoked(let reason):
            try recordEndedGrant(failure, reason: reason, refresh)
        }
    }

    /// Records a refresh the provider refused for good: the account needs a new login, and a
    /// grant the provider says it revoked also ends the session.
    private func recordEndedGrant(_ failure: RefreshError, reason: String, _ refresh: FinishingRefresh)
        throws(SessionError) -> Never
    {
        var (stored, id) = (refresh.stored, refresh.id)
        try transition(&stored, to: .needsLogin)
        var announcements = [Announcement(kind: .needsLogin, account: id, detail: reason)]
        if case .revoked = failure {
            try transition(&stored, to: .loggedOut)
            stored.tokens = nil
            stored.account.accessTokenExpiresAt = nil
            stored.account.refreshTokenExpiresAt = nil
            announcements.append(Announcement(kind: .loggedOut, account: id, reason: .revoked, revokedRemotely: true))
            try commitOrRestore(&stored, startedFrom: refresh.startedFrom, announcements)
        } else {
            stored.tokens?.refreshToken = nil
            stored.refreshAt = nil
            try commitOrRestore(&stored, startedFrom: refresh.startedFrom, refresh.expiryAnnouncement + announcements)
        }
        forgetFailures(id)
        throw .needsLogin(id)
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
        holdForProvider(refresh.id, until: until, reason: reason)
        // Subscribers hear of a hold as of any refresh that did not happen, with the rule.
        let held = Announcement(kind: .refreshFailed, account: refresh.id, retryAt: until, detail: reason)
        try commitOrRestore(&stored, startedFrom: refresh.startedFrom, refresh.expiryAnnouncement + [held])
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

    /// Holds every caller of `id`, early retries included, until `until`, as the provider asked
    /// or its rules say (`reason`, which callers whose token expires meanwhile are told).
    private func holdForProvider(_ id: String, until: Date, reason: String? = nil) {
        updateRefreshState(of: id) { state in
            state.providerHoldUntil = until
            state.holdReason = reason
        }
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
