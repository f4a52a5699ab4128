import FoundationEssentials

/// The timing rules of sessions.
public struct SessionPolicy: Sendable, Hashable {
    /// `expiring` is announced this long before the access token expires.
    public var expiringMargin: Duration
    /// `GetToken` refreshes a token that expires within this long, rather than hand it out.
    public var refreshMargin: Duration
    /// Longest sleep of the deadline loop between readings of the wall clock: how late a
    /// deadline fires at most after the wall clock was set, when nothing calls
    /// `SessionEngine.wallClockChanged()` to say so (sesamed does, when Linux lets it watch the
    /// clock). A resume needs no notice: the loop sleeps on a clock that counts suspended time.
    public var wallClockCheckInterval: Duration
    /// The least time between two looks at every account's deadlines: a burst of changes is
    /// looked at once per spacing, and a deadline still due after its events were fired (their
    /// save failed) is tried again after it.
    public var deadlineScanSpacing: Duration = .seconds(1)
    /// Whether tokens are refreshed ahead of expiry without anyone asking.
    public var refreshAhead: Bool
    /// The shortest time between two planned refreshes of one account, so a provider that hands
    /// out very short-lived tokens is not asked again and again (callers still get fresh tokens:
    /// `GetToken` refreshes on demand).
    public var minimumRefreshInterval: Duration
    /// The longest wait between retries after transient refresh failures.
    public var maximumRetryDelay: Duration
    /// `GetToken` of an expired token while backing off after a failure refreshes at most once
    /// in this long per account (a reported refusal is paced by the token refused instead).
    public var minimumRejectedRefreshInterval: Duration = .seconds(10)
    /// `refreshTokenExpiring` is announced this long before a refresh token that has not been
    /// renewed expires (for providers that say when, such as Kakao's `refresh_token_expires_in`).
    public var refreshTokenWarningMargin: Duration = .seconds(7 * 86400)

    /// Creates a policy.
    public init(
        expiringMargin: Duration = .seconds(60),
        refreshMargin: Duration = .seconds(30),
        wallClockCheckInterval: Duration = .seconds(300),
        refreshAhead: Bool = true,
        minimumRefreshInterval: Duration = .seconds(30),
        maximumRetryDelay: Duration = .seconds(300)
    ) {
        self.expiringMargin = expiringMargin
        self.refreshMargin = refreshMargin
        self.wallClockCheckInterval = wallClockCheckInterval
        self.refreshAhead = refreshAhead
        self.minimumRefreshInterval = minimumRefreshInterval
        self.maximumRetryDelay = maximumRetryDelay
    }

    /// When tokens obtained at `now` that expire at `expiry` should be refreshed: ahead of expiry
    /// by the larger of 60 s and 10 % of their lifetime, less up to a tenth of that at random so
    /// many accounts do not refresh at once, but never before half the lifetime has passed.
    /// Tokens without a lifetime, or living shorter than the minimum interval, are refreshed on
    /// demand only.
    public func refreshTime(obtainedAt now: Date, expiry: Date?) -> Date? {
        guard refreshAhead, let expiry else { return nil }
        let lifetime = expiry.timeIntervalSince(now)
        guard lifetime > 0, lifetime >= minimumRefreshInterval.timeInterval else { return nil }
        let margin = max(60, lifetime * 0.1)
        let jitter = Double.random(in: 0...(margin * 0.1))
        return max(expiry.addingTimeInterval(-margin - jitter), now.addingTimeInterval(lifetime / 2))
    }

    /// When `tokens` obtained at `now` should be refreshed ahead of expiry; nil when they have
    /// no refresh token to do it with.
    public func refreshTime(for tokens: TokenSet, obtainedAt now: Date) -> Date? {
        tokens.refreshToken == nil ? nil : refreshTime(obtainedAt: now, expiry: tokens.accessTokenExpiresAt)
    }

    /// How long to wait before retrying after `failures` transient refresh failures in a row:
    /// exponential from 5 s, never sooner than the provider asked (`atLeast`), capped at
    /// `maximumRetryDelay` either way (a provider's Retry-After of an hour would otherwise leave
    /// callers without tokens for that hour), with up to a fifth added at random so many
    /// clients do not retry in step.
    public func retryDelay(afterFailures failures: Int, atLeast: Duration) -> TimeInterval {
        let exponential = 5 * Double(1 << (min(max(failures, 1), 16) - 1))
        let base = min(max(exponential, atLeast.timeInterval), maximumRetryDelay.timeInterval)
        return base + Double.random(in: 0...(base * 0.2))
    }
}
