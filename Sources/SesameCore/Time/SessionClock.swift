import FoundationEssentials

/// The two readings session timing needs. Expiry is wall-clock time, which may jump; timers
/// sleep on a clock that never jumps and decide by the wall clock. On Linux `Task.sleep`
/// measures with `ContinuousClock`, which is CLOCK_BOOTTIME: it keeps counting while the
/// machine is suspended, so a sleep whose end passed during suspend returns right after resume.
/// A wall clock that is set while a timer sleeps is what the engine must hear of
/// (`SessionEngine.wallClockChanged()`); without such a notice, what bounds the delay is
/// `SessionPolicy.wallClockCheckInterval`.
public protocol SessionClock: Sendable {
    /// Wall-clock time: what token expiry is measured in. It may jump (NTP, a user, a resume).
    var now: Date { get }
    /// Sleeps for `duration` on a clock that never jumps (the system's counts suspended time too).
    func sleep(for duration: Duration) async throws
}

/// The real clocks: `Date()` and `Task.sleep` (`ContinuousClock`, CLOCK_BOOTTIME on Linux).
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
