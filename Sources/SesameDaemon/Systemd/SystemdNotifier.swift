import CSystemd

/// Tells the service manager how the daemon is doing (`sd_notify`); silent when not run by systemd.
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

        var assignments: [String] {
            switch self {
            case .ready: ["READY=1"]
            case .reloading(let usec): ["RELOADING=1", "MONOTONIC_USEC=\(usec)"]
            case .stopping: ["STOPPING=1"]
            case .status(let text): ["STATUS=\(text.replacingOccurrences(of: "\n", with: " "))"]
            case .watchdog: ["WATCHDOG=1"]
            }
        }
    }

    /// Creates a notifier; it talks to `$NOTIFY_SOCKET` when that is set.
    public init() {}

    /// Sends the given states in one datagram.
    public func notify(_ states: State...) {
        let message = states.flatMap(\.assignments).joined(separator: "\n")
        _ = sd_notify(0, message)
    }

    /// The interval at which systemd expects `WATCHDOG=1`, or nil when no watchdog is configured.
    public var watchdogInterval: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }
}
