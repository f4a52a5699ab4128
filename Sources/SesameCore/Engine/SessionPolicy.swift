/// The timing rules of sessions.
public struct SessionPolicy: Sendable, Hashable {
    /// `expiring` is announced this long before the access token expires.
    public var expiringMargin: Duration
    /// `GetToken` refreshes a token that expires within this long, rather than hand it out.
    public var refreshMargin: Duration
    /// Longest monotonic sleep between checks of the wall clock, which bounds how late an event
    /// fires after a resume from suspend or a clock jump.
    public var wallClockCheckInterval: Duration

    /// Creates a policy.
    public init(
        expiringMargin: Duration = .seconds(60),
        refreshMargin: Duration = .seconds(30),
        wallClockCheckInterval: Duration = .seconds(1)
    ) {
        self.expiringMargin = expiringMargin
        self.refreshMargin = refreshMargin
        self.wallClockCheckInterval = wallClockCheckInterval
    }
}
