import Foundation

extension SessionEngine {
    /// The tokens the account holds right now, refreshed or not: what a logout revokes.
    public func heldTokens(for id: String) throws(SessionError) -> TokenSet? {
        guard let stored = accounts[id] else { throw .noSuchAccount(id) }
        return stored.tokens
    }

    /// The account's current tokens, refreshed first when the access token expires within the
    /// refresh margin. Refreshes are single-flight: concurrent callers share one refresh.
    public func tokens(for id: String) async throws(SessionError) -> TokenSet {
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
        guard refreshDue || refreshes[id] != nil else { return tokens }
        guard tokens.refreshToken != nil else {
            if tokens.accessTokenHasExpired(at: clock.now) { throw .tokenExpired(id) }
            return tokens
        }
        return try await refresh(id)
    }

    /// Refreshes the account now (joining a refresh already in flight) and returns the new tokens.
    public func refresh(_ id: String) async throws(SessionError) -> TokenSet {
        let task: Task<TokenSet, any Error>
        if let running = refreshes[id] {
            task = running
        } else {
            guard var stored = accounts[id], let tokens = stored.tokens, stored.account.state.canRefresh else {
                throw accounts[id] == nil ? .noSuchAccount(id) : .needsLogin(id)
            }
            // `refreshing` is a passing state: shown by List, neither persisted nor announced.
            try transition(&stored, to: .refreshing)
            accounts[id] = stored
            let account = stored.account
            let refresher = self.refresher
            task = Task {
                let outcome: Result<TokenSet, RefreshFailure>
                do throws(RefreshFailure) {
                    outcome = .success(try await refresher.refresh(account, tokens: tokens))
                } catch {
                    outcome = .failure(error)
                }
                return try self.finishRefresh(id, outcome)
            }
            refreshes[id] = task
        }
        do {
            return try await task.value
        } catch let error as SessionError {
            throw error
        } catch {
            throw .refreshFailed(account: id, reason: "cancelled")
        }
    }

    private func finishRefresh(_ id: String, _ outcome: Result<TokenSet, RefreshFailure>) throws(SessionError)
        -> TokenSet
    {
        refreshes[id] = nil
        // The account may have been logged out or removed while the provider answered.
        guard var stored = accounts[id], stored.account.state == .refreshing, let old = stored.tokens else {
            throw .needsLogin(id)
        }
        let now = clock.now
        switch outcome {
        case .success(var fresh):
            if fresh.refreshToken == nil { fresh.refreshToken = old.refreshToken }
            if fresh.refreshTokenExpiresAt == nil && fresh.refreshToken == old.refreshToken {
                fresh.refreshTokenExpiresAt = old.refreshTokenExpiresAt
            }
            if fresh.idToken == nil { fresh.idToken = old.idToken }
            if fresh.scopes.isEmpty { fresh.scopes = old.scopes }
            try transition(&stored, to: .active)
            stored.tokens = fresh
            stored.expiringAnnounced = false
            stored.account.scopes = fresh.scopes
            stored.account.accessTokenExpiresAt = fresh.accessTokenExpiresAt
            stored.account.refreshTokenExpiresAt = fresh.refreshTokenExpiresAt
            try commitOrRestore(&stored, [Announcement(kind: .tokenRefreshed, account: id)])
            return fresh
        case .failure(.transient(let reason, let retryAfter)):
            try transition(&stored, to: old.accessTokenHasExpired(at: now) ? .expired : .active)
            let retryAt = now.addingTimeInterval(retryAfter.timeInterval)
            try commitOrRestore(&stored, [Announcement(kind: .refreshFailed, account: id, retryAt: retryAt)])
            throw .refreshFailed(account: id, reason: reason)
        case .failure(.unavailable):
            try transition(&stored, to: old.accessTokenHasExpired(at: now) ? .expired : .active)
            accounts[id] = stored
            if old.accessTokenHasExpired(at: now) { throw .tokenExpired(id) }
            return old
        case .failure(.invalidResponse(let reason)):
            // Garbage from the provider changes nothing: back to where the account was, unannounced.
            try transition(&stored, to: old.accessTokenHasExpired(at: now) ? .expired : .active)
            accounts[id] = stored
            throw .refreshFailed(account: id, reason: reason)
        case .failure(.needsLogin):
            try transition(&stored, to: .needsLogin)
            stored.tokens?.refreshToken = nil
            try commitOrRestore(&stored, [Announcement(kind: .needsLogin, account: id)])
            throw .needsLogin(id)
        case .failure(.revoked):
            try transition(&stored, to: .needsLogin)
            try transition(&stored, to: .loggedOut)
            stored.tokens = nil
            stored.account.accessTokenExpiresAt = nil
            stored.account.refreshTokenExpiresAt = nil
            try commitOrRestore(
                &stored,
                [
                    Announcement(kind: .needsLogin, account: id),
                    Announcement(kind: .loggedOut, account: id, reason: .revoked, revokedRemotely: true),
                ]
            )
            throw .needsLogin(id)
        }
    }

    /// Commits a refresh outcome; if saving fails, the account leaves `refreshing` for the state
    /// it had before, unannounced, so it is never stuck mid-refresh.
    private func commitOrRestore(_ stored: inout StoredAccount, _ announcements: [Announcement]) throws(SessionError) {
        let id = stored.account.id
        do {
            try commit([id: stored], announcing: announcements)
        } catch {
            if var current = accounts[id], current.account.state == .refreshing {
                let expired = current.tokens?.accessTokenHasExpired(at: clock.now) ?? true
                current.account.state = expired ? .expired : .active
                accounts[id] = current
            }
            throw error
        }
    }
}
