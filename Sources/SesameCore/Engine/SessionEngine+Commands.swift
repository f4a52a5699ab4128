import FoundationEssentials

/// What an app hands over when it imports a session it logged in itself.
public struct ImportedSession: Sendable {
    /// The configured provider name.
    public var provider: String
    /// The provider's subject identifier for the person.
    public var subject: String
    /// A name to show people.
    public var displayName: String?
    /// The uid that will own the account.
    public var owner: UInt32
    /// The tokens.
    public var tokens: TokenSet

    /// Creates an import request.
    public init(provider: String, subject: String, displayName: String? = nil, owner: UInt32, tokens: TokenSet) {
        self.provider = provider
        self.subject = subject
        self.displayName = displayName
        self.owner = owner
        self.tokens = tokens
    }
}

extension SessionEngine {
    /// Refuses, without changing anything, what `importSession` would refuse for its contents or
    /// the owner's quota: checked before a provider is asked to verify the tokens, so that a
    /// caller over its quota cannot make sesamed spend the provider's rate limit.
    public func checkAdmissible(_ session: ImportedSession, accountLimit: Int = .max) throws(SessionError) {
        try Self.validate(session)
        if renewedAccount(by: session) == nil,
            accounts.values.count(where: { $0.account.ownerUID == session.owner }) >= accountLimit
        {
            throw .tooManyAccounts(limit: accountLimit)
        }
    }

    /// The owner's account that `session` renews: the same provider and subject.
    private func renewedAccount(by session: ImportedSession) -> StoredAccount? {
        accounts.values.first {
            $0.account.provider == session.provider && $0.account.subject == session.subject
                && $0.account.ownerUID == session.owner
        }
    }

    /// Creates an account from tokens obtained elsewhere, or renews the owner's existing account
    /// for the same provider and subject; announces `loggedIn`. A new account is refused when
    /// its owner already has `accountLimit` accounts (logged-out ones count until removed). A
    /// grant the renewal replaces is revoked at the provider, as `logIn` says.
    public func importSession(_ session: ImportedSession, accountLimit: Int = .max) async throws(SessionError)
        -> Account
    {
        try await logIn(session, accountLimit: accountLimit).account
    }

    /// Saves `session` as `importSession` does, and returns the grant it replaced, if any: the
    /// renewed account's tokens, unless the new ones carry on the same grant (the same refresh
    /// token, or none new). That grant is kept with the account, saved with the new one, until
    /// the provider confirms it revoked; `loggedIn` is then announced by `logIn`.
    func admit(_ session: ImportedSession, accountLimit: Int) throws(SessionError) -> (Account, TokenSet?) {
        try checkAdmissible(session, accountLimit: accountLimit)
        let now = clock.now
        let existing = renewedAccount(by: session)
        var account =
            existing?.account
            ?? Account(
                id: makeAccountID(provider: session.provider),
                provider: session.provider,
                ownerUID: session.owner,
                subject: session.subject,
                state: .active,
                createdAt: now
            )
        var tokens = session.tokens
        // A login that brings no refresh token (Google issues one only at first consent) renews
        // the same grant: its refresh token, still held, must not be dropped with the old set.
        if tokens.refreshToken == nil, let existing, existing.account.state.canRefresh,
            let held = existing.tokens, held.refreshToken != nil
        {
            tokens.refreshToken = held.refreshToken
            tokens.refreshTokenExpiresAt = held.refreshTokenExpiresAt
        }
        let replaced = existing?.tokens.flatMap { Self.grant($0, isReplacedBy: tokens) ? $0.keptForRevocation : nil }
        account.displayName = session.displayName ?? account.displayName
        account.scopes = tokens.scopes
        account.state = .active
        account.accessTokenExpiresAt = tokens.accessTokenExpiresAt
        account.refreshTokenExpiresAt = tokens.refreshTokenExpiresAt
        account.updatedAt = now
        account.nextRefreshAt = policy.refreshTime(for: tokens, obtainedAt: now)
        var stored = StoredAccount(account: account, tokens: tokens, refreshAt: account.nextRefreshAt)
        stored.history = existing?.history
        // A grant handed in again is the current one, never one to revoke. Bounded, so that
        // logins repeated while the provider refuses every revocation cannot grow the store
        // without end: past the bound, the oldest is let go.
        let carried = (existing?.replacedGrants ?? []).filter { $0.refreshToken != tokens.refreshToken }
        let kept = (carried + (replaced.map { [$0] } ?? [])).suffix(Self.replacedGrantLimit)
        stored.replacedGrants = kept.isEmpty ? nil : Array(kept)
        // Tokens narrowed from the old grant go with it, now rather than once it is revoked.
        if replaced != nil { narrowed.forget(account: account.id) }
        let announcing = replaced == nil ? [Announcement(kind: .loggedIn, account: account.id)] : []
        try commit([account.id: stored], announcing: announcing)
        abandonRefresh(of: account.id)
        return (account, replaced)
    }

    /// The most replaced grants an account keeps to revoke.
    static var replacedGrantLimit: Int { 4 }

    /// Whether `old` is a grant of its own that `new` replaces, rather than the same grant: it
    /// holds another refresh token. Tokens without one are left to lapse: an access token ends
    /// by itself, and at some providers revoking one ends the person's other grants too.
    private static func grant(_ old: TokenSet, isReplacedBy new: TokenSet) -> Bool {
        guard let oldRefresh = old.refreshToken else { return false }
        return oldRefresh != new.refreshToken
    }

    /// Ends the session locally: tokens are wiped, the account stays as `loggedOut`, and
    /// `loggedOut` is announced with `reason`. `revokedTokens` are the tokens a remote
    /// revocation covered: if the account holds others by now (a new login or a refresh while
    /// the provider was asked), those were not revoked, and the event says so.
    public func logout(
        _ id: String,
        reason: AuthEvent.LogoutReason = .user,
        revokedRemotely: Bool? = nil,
        revokedTokens: TokenSet? = nil
    ) throws(SessionError) -> Account {
        guard var stored = accounts[id] else { throw .noSuchAccount(id) }
        var revokedRemotely = revokedRemotely
        if revokedRemotely == true, let revokedTokens, stored.tokens != revokedTokens {
            revokedRemotely = false
        }
        try transition(&stored, to: .loggedOut)
        stored.tokens = nil
        stored.expiringAnnounced = false
        stored.refreshAt = nil
        stored.account.accessTokenExpiresAt = nil
        stored.account.refreshTokenExpiresAt = nil
        try commit(
            [id: stored],
            announcing: [Announcement(kind: .loggedOut, account: id, reason: reason, revokedRemotely: revokedRemotely)]
        )
        abandonRefresh(of: id)
        return stored.account
    }

    /// Ends the session after revoking its grant with `revoke`: a refresh in flight is waited
    /// for (at most `patience`, then abandoned) and no new one starts meanwhile, so the tokens
    /// revoked are the ones the account holds (a rotated refresh token that landed a moment ago
    /// included, and a login that lands during the revocation is revoked too). The local wipe
    /// happens whatever `revoke` says; the event and the result say whether the provider confirmed.
    public func logout(
        _ id: String,
        reason: AuthEvent.LogoutReason = .user,
        waitingAtMost patience: Duration,
        revokingWith revoke: @Sendable (TokenSet) async -> RemoteRevocation
    ) async throws(SessionError) -> (account: Account, revocation: RemoteRevocation) {
        guard accounts[id] != nil else { throw .noSuchAccount(id) }
        updateRefreshState(of: id) { $0.logouts += 1 }
        defer {
            updateRefreshState(of: id) { $0.logouts -= 1 }
            changes.yield()
        }
        var note: String?
        if let running = refreshState(of: id).inFlight,
            await TaskDeadline.result(of: running.task, within: patience, clock: clock) == nil
        {
            abandonRefresh(of: id)
            note = "a refresh that did not finish in time was abandoned; tokens it may bring were not revoked"
        }
        guard let held = accounts[id] else { throw .noSuchAccount(id) }
        guard held.account.state.allows(.loggedOut) else {
            throw .illegalTransition(IllegalTransitionError(account: id, from: held.account.state, to: .loggedOut))
        }
        var revocation = RemoteRevocation(confirmed: false, reason: "the account holds no tokens")
        var revoked: TokenSet?
        // Only a login or import can change the tokens now; each one that lands is revoked too.
        for _ in 0..<3 {
            guard let current = accounts[id]?.tokens, current != revoked else { break }
            revocation = await revoke(current)
            revoked = current
        }
        if revocation.confirmed, accounts[id]?.tokens != revoked {
            revocation = RemoteRevocation(confirmed: false, reason: "the account kept logging in while it was revoked")
        } else if revocation.confirmed, let note {
            revocation = RemoteRevocation(confirmed: true, reason: note)
        }
        let account = try logout(id, reason: reason, revokedRemotely: revocation.confirmed)
        return (account, revocation)
    }

    /// Deletes the account record (logged out or not); announces `accountRemoved`.
    public func remove(_ id: String) throws(SessionError) {
        guard accounts[id] != nil else { throw .noSuchAccount(id) }
        try commit([id: nil], announcing: [Announcement(kind: .accountRemoved, account: id)])
        abandonRefresh(of: id)
        revocationRetries[id] = nil
    }

    private func makeAccountID(provider: String) -> String {
        while true {
            let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
            let id = "\(provider)-\(String(repeating: "0", count: 8 - suffix.count))\(suffix)"
            if accounts[id] == nil { return id }
        }
    }

    private static func validate(_ session: ImportedSession) throws(SessionError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_.")
        guard !session.provider.isEmpty, session.provider.count <= 64, session.provider.allSatisfy(allowed.contains)
        else {
            throw .invalidTokens("provider must be 1 to 64 of a-z, 0-9, '-', '_', '.'")
        }
        guard !session.subject.isEmpty, session.subject.utf8.count <= 1024 else {
            throw .invalidTokens("subject must be 1 to 1024 bytes")
        }
        guard !session.tokens.accessToken.isEmpty, session.tokens.accessToken.utf8.count <= 65536 else {
            throw .invalidTokens("access token must be 1 to 65536 bytes")
        }
        if let refresh = session.tokens.refreshToken, refresh.isEmpty || refresh.utf8.count > 65536 {
            throw .invalidTokens("refresh token must be 1 to 65536 bytes")
        }
        try validateDetails(session)
    }

    /// The bounds of everything else an account keeps, so that no account costs the store, the
    /// engine or a List reply more than a few hundred kilobytes.
    private static func validateDetails(_ session: ImportedSession) throws(SessionError) {
        let (limits, tokens) = (AccountFieldLimits.self, session.tokens)
        guard limits.fits(idToken: tokens.idToken) else {
            throw .invalidTokens("the ID token must be at most \(limits.idToken) bytes")
        }
        guard limits.fits(tokenType: tokens.tokenType) else {
            throw .invalidTokens("the token type must be 1 to \(limits.tokenType) bytes")
        }
        if let name = session.displayName, name.utf8.count > limits.displayName {
            throw .invalidTokens("the display name must be at most \(limits.displayName) bytes")
        }
        guard limits.fits(scopes: tokens.scopes) else {
            throw .invalidTokens("at most \(limits.scopes) scopes of 1 to \(limits.scope) bytes each")
        }
        guard limits.fits(expiry: tokens.accessTokenExpiresAt), limits.fits(expiry: tokens.refreshTokenExpiresAt) else {
            throw .invalidTokens("an expiry time is outside the years 2000 to 2200")
        }
    }

}

/// Whether the provider confirmed a revocation, and if not, why not.
public struct RemoteRevocation: Sendable, Hashable {
    /// The provider confirmed it (RFC 7009 §2.2).
    public var confirmed: Bool
    /// Why it was not confirmed, in sesamed's words; nil when it was.
    public var reason: String?

    /// Creates an outcome.
    public init(confirmed: Bool, reason: String? = nil) {
        self.confirmed = confirmed
        self.reason = reason
    }
}
