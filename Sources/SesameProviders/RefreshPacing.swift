import FoundationEssentials

/// How often a provider lets one account's tokens be refreshed: the rules a provider documents
/// and enforces by throttling or refusing, kept by sesamed before it asks.
public struct RefreshPacing: Sendable, Hashable {
    /// At most `count` refreshes of one account within any `window`.
    public struct Limit: Sendable, Hashable {
        /// How many refreshes the window allows.
        public var count: Int
        /// The sliding window.
        public var window: Duration

        /// Creates a limit.
        public init(count: Int, window: Duration) {
            self.count = count
            self.window = window
        }
    }

    /// The shortest time between two refreshes of one account; nil for none.
    public var minimumInterval: Duration?
    /// Limits on refreshes of one account per window.
    public var limits: [Limit]
    /// The provider's rule in a few words, for the reason a paced refresh gives.
    public var rule: String

    /// Creates a pacing; the default lets every refresh through.
    public init(minimumInterval: Duration? = nil, limits: [Limit] = [], rule: String = "") {
        self.minimumInterval = minimumInterval
        self.limits = limits
        self.rule = rule
    }

    /// Whether any refresh is ever held back.
    public var isUnpaced: Bool { minimumInterval == nil && limits.isEmpty }

    /// When the next refresh may be made, given the times of earlier ones (oldest first), or
    /// nil if one may be made at `now`.
    public func nextAllowed(after earlier: [Date], now: Date) -> Date? {
        var allowed: Date?
        if let minimumInterval, let last = earlier.last {
            let next = last.addingTimeInterval(minimumInterval.timeInterval)
            if next > now { allowed = next }
        }
        for limit in limits {
            let start = now.addingTimeInterval(-limit.window.timeInterval)
            let inWindow = earlier.filter { $0 > start }
            guard inWindow.count >= limit.count else { continue }
            // Room comes back when the oldest refresh that still counts leaves the window.
            let next = inWindow[inWindow.count - limit.count].addingTimeInterval(limit.window.timeInterval)
            allowed = max(allowed ?? next, next)
        }
        return allowed
    }

    /// How far back earlier refreshes matter.
    public var memory: Duration {
        ([minimumInterval ?? .zero] + limits.map(\.window)).max() ?? .zero
    }
}

extension AppleProvider {
    /// "Generate and validate tokens": a refresh token may be verified at most once a day;
    /// Apple may throttle an app that does so more often.
    public static let refreshPacing = RefreshPacing(
        minimumInterval: .seconds(86400),
        rule: "Apple asks that a refresh token be validated at most once a day"
    )
}

extension KakaoProvider {
    /// Kakao Login's per-user issuance limits ("REST API", token issuance): 20 access tokens
    /// in 10 minutes and 30 refresh tokens in an hour; a refresh issues an access token and, in
    /// the refresh token's last month, a refresh token too.
    public static let refreshPacing = RefreshPacing(
        limits: [
            .init(count: 20, window: .seconds(600)),
            .init(count: 30, window: .seconds(3600)),
        ],
        rule: "Kakao issues one user at most 20 access tokens in 10 minutes and 30 refresh tokens an hour"
    )
}
