import CSessionBus
import Synchronization

/// Only signals from the server that answered our last `Notify` count: any program of the user's
/// on the session bus may send a signal under the server's interface, and one that said a
/// notice was clicked would start a login.
final class SignalSink: Sendable {
    let continuation: AsyncStream<NotificationBus.Signal>.Continuation
    let sd: SDBus
    /// The server's unique name on the bus (a new one when the server is restarted).
    private let server = Mutex<String?>(nil)

    /// A sink handing signals to `continuation`, read with `sd`.
    init(_ continuation: AsyncStream<NotificationBus.Signal>.Continuation, sd: SDBus) {
        self.continuation = continuation
        self.sd = sd
    }

    /// Takes signals from `name` from now on: the sender of the last reply to `Notify`.
    func trust(_ name: String?) {
        server.withLock { $0 = name }
    }

    /// The bus daemon's name, path and interface, which `NameOwnerChanged` comes from.
    static let bus = "org.freedesktop.DBus"
    static let busPath = "/org/freedesktop/DBus"

    /// Reads `ActionInvoked (u id, s action_key)` or `NotificationClosed (u id, u reason)` from
    /// the server, or the bus daemon's `NameOwnerChanged (s name, s old, s new)`.
    func receive(_ message: OpaquePointer) {
        let sender = sd.getSender(message).map { String(cString: $0) }
        if sender == Self.bus, sd.isSignal(message, Self.bus, "NameOwnerChanged") > 0 {
            if let (name, _, new) = threeStrings(message), name == DesktopNotice.destination, !new.isEmpty {
                continuation.yield(.serverStarted)
            }
            return
        }
        guard let sender, server.withLock({ $0 == sender }) else { return }
        var id: UInt32 = 0
        guard sd.readBasic(message, DBusType.uint32, &id) >= 0 else { return }
        if sd.isSignal(message, DesktopNotice.interface, "ActionInvoked") > 0 {
            var key: UnsafePointer<CChar>?
            guard sd.readBasic(message, DBusType.string, &key) >= 0, let key else { return }
            continuation.yield(.actionInvoked(id: id, key: String(cString: key)))
        } else {
            continuation.yield(.closed(id: id))
        }
    }

    private func threeStrings(_ message: OpaquePointer) -> (String, String, String)? {
        var texts: [String] = []
        for _ in 0..<3 {
            var text: UnsafePointer<CChar>?
            guard sd.readBasic(message, DBusType.string, &text) >= 0, let text else { return nil }
            texts.append(String(cString: text))
        }
        return (texts[0], texts[1], texts[2])
    }
}

/// Why sesame-notify cannot talk to the notification server.
enum NotificationBusError: Error, CustomStringConvertible {
    /// No session bus could be reached.
    case noSessionBus(reason: String)
    /// The server, or the bus, refused a call: the D-Bus error's name (never its free text).
    case refused(name: String)
    /// The connection closed before the call was made.
    case closed

    var description: String {
        switch self {
        case .noSessionBus(let reason): "no session bus to post notices on (\(reason))"
        case .refused(let name): "the notification server refused the notice (\(name))"
        case .closed: "the session bus closed"
        }
    }
}
