import Synchronization

/// How many notices about one uid's misbehaviour (invalid or oversized messages) reach the log:
/// a peer that sends bad messages in a loop would otherwise write a line to the journal for each
/// and flood it. Each uid gets `perWindow` lines a `window`; what is held back after that is
/// counted, and the next line let through says how many were.
public final class PeerLogBudget: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var logged = 0
        var heldBack = 0
    }

    /// Lines one uid may cause in a window.
    let perWindow: Int
    /// How long a window lasts.
    let window: Duration
    /// Uids tracked at most; past that, windows that have ended are dropped first.
    private static let trackedLimit = 4096
    private let windows = Mutex<[UInt32: Window]>([:])

    /// A budget of `perWindow` lines per uid and `window`.
    public init(perWindow: Int = 10, window: Duration = .seconds(60)) {
        self.perWindow = perWindow
        self.window = window
    }

    /// Whether a line about `uid` may be logged `now`: nil when it is held back, else how many
    /// were held back since the last one logged (0 mostly).
    public func admit(_ uid: UInt32, at now: ContinuousClock.Instant) -> Int? {
        windows.withLock { windows in
            if windows.count >= Self.trackedLimit, windows[uid] == nil {
                windows = windows.filter { now - $0.value.start < window }
                // Every tracked uid is still inside its window: one more is not worth the memory.
                guard windows.count < Self.trackedLimit else { return nil }
            }
            var current = windows[uid] ?? Window(start: now)
            if now - current.start >= window { current = Window(start: now, heldBack: current.heldBack) }
            defer { windows[uid] = current }
            guard current.logged < perWindow else {
                current.heldBack += 1
                return nil
            }
            current.logged += 1
            defer { current.heldBack = 0 }
            return current.heldBack
        }
    }
}
