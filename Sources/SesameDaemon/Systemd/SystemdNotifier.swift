import CSystemd
import Dispatch
import Synchronization

/// Tells the service manager how the daemon is doing (`sd_notify`); silent when not run by systemd.
///
/// Notifications go out in order from a queue of their own, never from the caller: `sd_notify`
/// blocks while the manager's socket is full, and a manager that stops reading (a busy PID 1, a
/// test that only listens now and then) must not stall a service, let alone its shutdown.
public struct SystemdNotifier: Sendable {
    /// One assignment of the notify protocol.
    public enum State: Sendable, Hashable {
        /// Start-up is complete and the socket accepts connections.
        case ready
        /// A configuration reload began; `ready` follows when it is done.
        case reloading(monotonicMicroseconds: UInt64)
        /// The daemon is shutting down.
        case stopping
        /// A one-line human-readable status.
        case status(String)
        /// The daemon is alive (resets the watchdog timer).
        case watchdog

        /// `text` on one line, since a line break ends an assignment: every break (CRLF, which
        /// Swift counts as one character, too) becomes a space.
        static func oneLine(_ text: String) -> String {
            text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).joined(separator: " ")
        }

        var assignments: [String] {
            switch self {
            case .ready: ["READY=1"]
            case .reloading(let usec): ["RELOADING=1", "MONOTONIC_USEC=\(usec)"]
            case .stopping: ["STOPPING=1"]
            case .status(let text): ["STATUS=" + Self.oneLine(text)]
            case .watchdog: ["WATCHDOG=1"]
            }
        }

        /// Whether a newer message makes this one moot, so it may be dropped when the manager
        /// does not keep up: a status line or a watchdog ping, never a state change.
        var isRoutine: Bool {
            switch self {
            case .status, .watchdog: true
            case .ready, .reloading, .stopping: false
            }
        }
    }

    /// How many routine messages may wait for a manager that does not read before more are dropped.
    static let routineBacklogLimit = 16

    private let outbox: Outbox

    /// Creates a notifier; it talks to `$NOTIFY_SOCKET` when that is set.
    public init() {
        self.init(send: { message in _ = sd_notify(0, message) })
    }

    /// Creates a notifier that hands each datagram to `send`, which may block.
    init(send: @escaping @Sendable (String) -> Void) {
        self.outbox = Outbox(send: send)
    }

    /// Sends the given states in one datagram, after those sent before; returns at once.
    public func notify(_ states: State...) {
        let message = states.flatMap(\.assignments).joined(separator: "\n")
        outbox.post(message, routine: states.allSatisfy(\.isRoutine))
    }

    /// Returns once every message posted so far has been handed to the manager, or after `limit`
    /// when the manager does not read: what the daemon says just before it exits is not lost.
    public func flush(waitingAtMost limit: Duration) async {
        await outbox.flush(waitingAtMost: limit)
    }

    /// The interval at which systemd expects `WATCHDOG=1`, or nil when no watchdog is configured.
    public var watchdogInterval: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }
}

/// The queue behind `SystemdNotifier`: one serial dispatch queue, so a blocked send holds up only
/// later notifications and never a thread of the cooperative pool.
private final class Outbox: Sendable {
    private let queue = DispatchQueue(label: "sesame.systemd-notify")
    private let send: @Sendable (String) -> Void
    /// Routine messages posted but not yet sent.
    private let routineBacklog = Mutex(0)

    init(send: @escaping @Sendable (String) -> Void) {
        self.send = send
    }

    func post(_ message: String, routine: Bool) {
        if routine {
            let accepted = routineBacklog.withLock { count in
                guard count < SystemdNotifier.routineBacklogLimit else { return false }
                count += 1
                return true
            }
            guard accepted else { return }
        }
        queue.async {
            self.send(message)
            if routine { self.routineBacklog.withLock { $0 -= 1 } }
        }
    }

    func flush(waitingAtMost limit: Duration) async {
        let (seconds, attoseconds) = limit.components
        let nanoseconds = Int(clamping: seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiter = Waiter(continuation)
            queue.async { waiter.resume() }
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { waiter.resume() }
        }
    }
}

/// A continuation that whichever comes first resumes, once.
private final class Waiter: Sendable {
    private let continuation: Mutex<CheckedContinuation<Void, Never>?>

    init(_ continuation: CheckedContinuation<Void, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume() {
        continuation.withLock { $0.take() }?.resume()
    }
}
