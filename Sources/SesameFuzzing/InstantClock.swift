import Foundation
import SesameCore
import Synchronization

/// A clock whose sleeps return at once and move its time on, so a provider's polling loop runs
/// to its own deadline within one fuzz input instead of waiting in real time.
public final class InstantClock: SessionClock {
    private let current: Mutex<Date>

    /// Starts at `start`.
    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func sleep(for duration: Duration) async throws {
        // As a real clock's sleep does: a cancelled task's wait ends at once, with an error.
        try Task.checkCancellation()
        current.withLock {
            $0 += TimeInterval(duration.components.seconds) + 1e-18 * Double(duration.components.attoseconds)
        }
        await Task.yield()
    }
}
