import SesameWire
import Synchronization

/// What a connection may call once a service has narrowed it: a connection handed on to a less
/// trusted peer (through a share's relay, say) keeps the credentials of the process that made
/// it, so its limits must travel with the connection, not with the credentials.
public protocol ConnectionRestriction: Sendable {
    /// Nil to let `method` (fully qualified) be answered, or the error to answer it with instead.
    func refusal(of method: String) -> VarlinkError?
}

/// The restriction a connection is under, if any (as sd_varlink's per-connection userdata): set
/// at most once, by a call of the connection's own, and held until the connection closes.
/// Every call's context carries it, so a handler can find what its connection was made into.
public final class ConnectionScope: Sendable {
    /// The restriction, and what is to be done when the connection closes (nil once it has).
    private struct State {
        var restriction: (any ConnectionRestriction)?
        var whenClosed: [@Sendable () -> Void]? = []
    }

    private let current = Mutex(State())
    /// Set, after `current`, once a restriction is in force: every call of every connection
    /// looks, and almost none is restricted, so they look here first instead of taking the lock.
    private let restricted = Atomic(false)

    /// A scope with no restriction yet.
    public init() {}

    /// The restriction in force, or nil while the connection may call anything.
    public var restriction: (any ConnectionRestriction)? {
        guard restricted.load(ordering: .acquiring) else { return nil }
        return current.withLock { $0.restriction }
    }

    /// Puts the connection under `restriction` for the rest of its life. False when it is under
    /// one already: a restriction is never swapped for another, which might allow more.
    public func restrict(to restriction: any ConnectionRestriction) -> Bool {
        let set = current.withLock { current in
            guard current.restriction == nil else { return false }
            current.restriction = restriction
            return true
        }
        if set { restricted.store(true, ordering: .releasing) }
        return set
    }

    /// The error `method` is refused with on this connection, or nil to answer it.
    public func refusal(of method: String) -> VarlinkError? {
        restriction?.refusal(of: method)
    }

    /// Runs `action` once the connection has closed (at once if it has): what a call left
    /// waiting for a later call of the same connection ends with it.
    public func whenClosed(_ action: @escaping @Sendable () -> Void) {
        let closed = current.withLock { current in
            guard current.whenClosed != nil else { return true }
            current.whenClosed?.append(action)
            return false
        }
        if closed { action() }
    }

    /// Runs what `whenClosed` asked for; called once, as the connection ends (by the server, or
    /// a test playing one).
    public func closed() {
        let actions = current.withLock { current in
            defer { current.whenClosed = nil }
            return current.whenClosed ?? []
        }
        for action in actions { action() }
    }
}
