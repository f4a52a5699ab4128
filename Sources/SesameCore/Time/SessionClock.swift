import Foundation

/// The two readings session timing needs. Expiry is wall-clock time, but only a monotonic clock
/// makes a reliable timer, and a monotonic clock stands still while the machine is suspended;
/// so timers sleep on the monotonic clock in short steps and decide on the wall clock.
public protocol SessionClock: Sendable {
    /// Wall-clock time: what token expiry is measured in. It may jump (NTP, a user, a resume).
    var now: Date { get }
    /// Sleeps for `duration` of monotonic time (which does not advance during suspend).
    func sleep(for duration: Duration) async throws
}

/// The real clocks: `Date()` and `ContinuousClock`.
public struct SystemSessionClock: SessionClock {
    /// Creates the system clock.
    public init() {}

    public var now: Date { Date() }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

extension Duration {
    /// This duration in seconds, as Foundation measures intervals.
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
