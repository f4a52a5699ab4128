import FoundationEssentials

/// What became of the grant a new login replaced: the provider confirmed it revoked, or it is
/// kept and tried again (or, when it can never be revoked, why not).
public struct ReplacedGrantRevocation: Sendable, Hashable {
    /// The provider confirmed the revocation.
    public var confirmed: Bool
    /// Why not, in sesamed's words; nil when confirmed.
    public var reason: String?
    /// Whether sesamed keeps the grant and tries again.
    public var retrying: Bool

    /// Creates an outcome.
    public init(confirmed: Bool, reason: String? = nil, retrying: Bool = false) {
        self.confirmed = confirmed
        self.reason = reason
        self.retrying = retrying
    }
}

/// A login's account, and what became of the grant it replaced, if it replaced one.
public struct LoginOutcome: Sendable {
    /// The account, new or renewed.
    public var account: Account
    /// The replaced grant's revocation; nil when the login replaced none.
    public var replacedGrant: ReplacedGrantRevocation?
}

extension SessionEngine {
    /// Logs `session` in (`importSession`) and, once the new grant is saved, revokes the grant
    /// it replaced at the provider (RFC 7009, or the provider's own call; RFC 9700 §2.2.2: a
    /// refresh token nobody holds any more must not stay alive). `loggedIn` is announced then,
    /// saying whether the provider confirmed; a grant it did not is kept in the store and tried
    /// again with backoff by the deadline loop, never dropped unsaid.
    public func logIn(_ session: ImportedSession, accountLimit: Int = .max) async throws(SessionError) -> LoginOutcome {
        let (account, replaced) = try admit(session, accountLimit: accountLimit)
        guard replaced != nil else { return LoginOutcome(account: account, replacedGrant: nil) }
        let revocation = await revokeReplacedGrants(of: account.id, announcingLogin: true)
        return LoginOutcome(account: (try? self.account(account.id)) ?? account, replacedGrant: revocation)
    }

    /// Tries to revoke every replaced grant the account keeps, then saves what is left: those
    /// the provider did not confirm, unless they can never be revoked or have lapsed. With
    /// `announcingLogin`, announces `loggedIn` in the same commit.
    @discardableResult
    func revokeReplacedGrants(of id: String, announcingLogin: Bool = false) async -> ReplacedGrantRevocation {
        guard let stored = accounts[id] else {
            revocationRetries[id] = nil
            return ReplacedGrantRevocation(confirmed: false, reason: "the account was removed")
        }
        revocationRetries[id, default: RevocationRetry()].running = true
        var outcome = ReplacedGrantRevocation(confirmed: true)
        var ended: [TokenSet] = []
        for grant in stored.replacedGrants ?? [] {
            // Looked at again before each call: a login meanwhile may have made it current.
            guard let now = accounts[id], now.replacedGrants?.contains(grant) == true,
                now.tokens?.refreshToken != grant.refreshToken
            else { continue }
            if Self.hasLapsed(grant, at: clock.now) {
                ended.append(grant)
                continue
            }
            do throws(RevocationError) {
                try await refresher.revoke(now.account, grant: grant)
                ended.append(grant)
            } catch {
                if error.isFinal { ended.append(grant) }
                outcome = ReplacedGrantRevocation(confirmed: false, reason: error.reason, retrying: !error.isFinal)
            }
        }
        settleReplacedGrants(of: id, ended: ended, outcome: outcome, announcingLogin: announcingLogin)
        return outcome
    }

    /// Saves the account without the grants that `ended`, and plans the next try for the rest.
    private func settleReplacedGrants(
        of id: String,
        ended: [TokenSet],
        outcome: ReplacedGrantRevocation,
        announcingLogin: Bool
    ) {
        var retry = revocationRetries[id] ?? RevocationRetry()
        retry.running = false
        guard var current = accounts[id] else {
            revocationRetries[id] = nil
            return
        }
        let left = (current.replacedGrants ?? []).filter { !ended.contains($0) }
        current.replacedGrants = left.isEmpty ? nil : left
        // A logout while the provider was asked ended the login this would announce.
        let announcements =
            announcingLogin && current.account.state != .loggedOut
            ? [
                Announcement(
                    kind: .loggedIn,
                    account: id,
                    revokedRemotely: outcome.confirmed,
                    detail: outcome.reason.map { "the grant this login replaced was not revoked: \($0)" }
                )
            ] : []
        let saved = (try? commit([id: current], announcing: announcements)) != nil
        if left.isEmpty && saved {
            revocationRetries[id] = nil
            return
        }
        retry.failures += 1
        if retry.failures >= Self.revocationAttempts, saved {
            // The provider has refused long enough that trying on would only load it: the
            // grants are let go (each try was logged with its reason).
            current.replacedGrants = nil
            if (try? commit([id: current], announcing: [])) != nil {
                revocationRetries[id] = nil
                return
            }
        }
        retry.notBefore = clock.now.addingTimeInterval(
            policy.retryDelay(afterFailures: retry.failures, atLeast: .zero)
        )
        revocationRetries[id] = retry
    }

    /// How many tries in a row may leave a replaced grant unrevoked before it is let go: with
    /// the refresh backoff, about an hour of trying.
    static var revocationAttempts: Int { 16 }

    /// When the account's replaced grants are next tried, if it keeps any and no try runs.
    func replacedGrantsDeadline(of stored: StoredAccount) -> Date? {
        guard stored.replacedGrants?.isEmpty == false else { return nil }
        guard let retry = revocationRetries[stored.account.id] else { return clock.now }
        return retry.running ? nil : retry.notBefore
    }

    /// Starts the revocations that are due, each in a task of its own.
    func startDueRevocations(now: Date) {
        for stored in accounts.values {
            guard let due = replacedGrantsDeadline(of: stored), due <= now else { continue }
            let id = stored.account.id
            revocationRetries[id, default: RevocationRetry()].running = true
            Task { await self.revokeReplacedGrants(of: id) }
        }
    }

    /// A grant that no longer works anyway: its refresh token has expired, or it had none and
    /// its access token has.
    private static func hasLapsed(_ grant: TokenSet, at now: Date) -> Bool {
        if grant.refreshToken != nil { return grant.refreshTokenExpiresAt.map { $0 <= now } ?? false }
        return grant.accessTokenHasExpired(at: now)
    }
}

/// How the revocations of one account's replaced grants are retried.
struct RevocationRetry {
    /// Tries in a row that left a grant unrevoked.
    var failures = 0
    /// Not tried again before this.
    var notBefore: Date?
    /// A try is under way.
    var running = false
}
