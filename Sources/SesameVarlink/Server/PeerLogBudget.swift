import Logging
import Synchronization

/// How many lines one uid may make sesamed log of one kind, across all its connections (its
/// bad messages and connections, or its calls' lines through `BudgetedLogHandler`, shares
/// included). A peer doing any of these in a loop would otherwise write a line to the journal
/// for each and flood it. Each uid gets `perWindow` lines a `window`; what is held back after
/// that is counted, and the next line let through says how many were. Errors, sesamed's own
/// faults, always pass. All uids together get `allPerWindow`, so many uids of one person add
/// up to a bound too.
final class PeerLogBudget: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var logged = 0
        var heldBack = 0

        /// This window, or a new one carrying its held-back count when it has ended by `now`.
        func current(at now: ContinuousClock.Instant, lasting window: Duration) -> Window {
            now - start >= window ? Window(start: now, heldBack: heldBack) : self
        }
    }

    private struct Windows {
        var perUid: [UInt32: Window] = [:]
        /// What all uids together have logged: one person may hold many uids (a subordinate
        /// uid range for user namespaces gives them 65,536), and each would have a budget.
        var all: Window
    }

    /// Lines one uid may cause in a window.
    let perWindow: Int
    /// Lines all uids together may cause in a window.
    let allPerWindow: Int
    /// How long a window lasts.
    let window: Duration
    /// Uids tracked at most; past that, windows that have ended are dropped first.
    private static let trackedLimit = 4096
    private let windows: Mutex<Windows>

    /// A budget of `perWindow` lines per uid and `window`, and `allPerWindow` (sixteen uids'
    /// worth unless given) for all of them.
    init(perWindow: Int, allPerWindow: Int? = nil, window: Duration = .seconds(60)) {
        self.perWindow = perWindow
        self.allPerWindow = allPerWindow ?? perWindow * 16
        self.window = window
        self.windows = Mutex(Windows(all: Window(start: .now)))
    }

    /// Whether a line about `uid` may be logged `now`: nil when it is held back, else how many
    /// were held back since the last one logged (0 mostly).
    func admit(_ uid: UInt32, at now: ContinuousClock.Instant) -> Int? {
        windows.withLock { windows in
            if windows.perUid.count >= Self.trackedLimit, windows.perUid[uid] == nil {
                windows.perUid = windows.perUid.filter { now - $0.value.start < window }
                // Every tracked uid is still inside its window: one more is not worth the memory.
                guard windows.perUid.count < Self.trackedLimit else { return nil }
            }
            var current = (windows.perUid[uid] ?? Window(start: now)).current(at: now, lasting: window)
            windows.all = windows.all.current(at: now, lasting: window)
            defer { windows.perUid[uid] = current }
            guard current.logged < perWindow, windows.all.logged < allPerWindow else {
                current.heldBack += 1
                return nil
            }
            current.logged += 1
            windows.all.logged += 1
            defer { current.heldBack = 0 }
            return current.heldBack
        }
    }

    /// The metadata a line at `level` that `uid` caused is logged with now (`held_back` added
    /// when lines were held back before it), or nil when the line is held back.
    func admit(
        _ level: Logger.Level,
        from uid: UInt32,
        metadata: Logger.Metadata,
        at now: ContinuousClock.Instant = .now
    ) -> Logger.Metadata? {
        guard level < .error else { return metadata }
        guard let heldBack = admit(uid, at: now) else { return nil }
        return heldBack > 0 ? metadata.merging(["held_back": "\(heldBack)"]) { $1 } : metadata
    }
}

/// The log handler of a call's logger: every line below an error that a peer's calls make
/// sesamed log is spent from its uid's budget (`PeerLogBudget`), whichever call or connection it
/// came through, so no user floods the journal by what they ask.
struct BudgetedLogHandler: LogHandler {
    private var wrapped: any LogHandler
    private let uid: UInt32
    private let budget: PeerLogBudget

    init(wrapping wrapped: any LogHandler, uid: UInt32, budget: PeerLogBudget) {
        self.wrapped = wrapped
        self.uid = uid
        self.budget = budget
    }

    func log(event: LogEvent) {
        guard let metadata = budget.admit(event.level, from: uid, metadata: event.metadata ?? [:]) else { return }
        var event = event
        event.metadata = metadata
        wrapped.log(event: event)
    }

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }
}
