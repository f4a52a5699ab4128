import NIOConcurrencyHelpers
import NIOCore

/// The connections a server has open, so that a stop reaches each of them, and a stopped
/// server returns once none is left. What a connection is doing is its handler's alone
/// (`VarlinkConnectionHandler`, through its state machine): a stop is sent down each
/// connection's pipeline (`Stop`), and the handler acts on it on its own loop. An idle
/// connection (or one with half a call in it) is closed at once, a streaming call is
/// cancelled, and a call being answered is left to finish, until a hard stop closes whatever
/// is still open.
final class OpenConnections: Sendable {
    /// Identifies one registered connection.
    struct ID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    /// How the server stops, sent to every open connection as a user event. A hard stop is
    /// never followed by a graceful one, and neither is sent twice.
    enum Stop: Sendable {
        /// No new call; idle connections close, streaming calls are cancelled, the others finish.
        case graceful
        /// Every connection closes now and the call it was answering is cancelled.
        case hard
    }

    private struct State {
        var channels: [ID: any Channel] = [:]
        var nextID: UInt64 = 0
        var stop: Stop?
        /// Connections accepted and on their way to an event loop, not yet registered.
        var handingOver = 0
        /// Who waits for every connection to end after a stop.
        var waiters: [CheckedContinuation<Void, Never>] = []

        /// The waiters to resume, once stopping and nothing is left; none otherwise.
        mutating func takeWaitersIfDone() -> [CheckedContinuation<Void, Never>] {
            guard stop != nil, channels.isEmpty, handingOver == 0 else { return [] }
            defer { waiters = [] }
            return waiters
        }
    }

    private let state = NIOLockedValueBox(State())

    /// Registers a new connection; nil (and the channel closed) when the server is stopping.
    func register(_ channel: any Channel) -> ID? {
        let id = state.withLockedValue { state -> ID? in
            guard state.stop == nil else { return nil }
            let id = ID(value: state.nextID)
            state.nextID += 1
            state.channels[id] = channel
            return id
        }
        if id == nil { channel.close(promise: nil) }
        return id
    }

    /// Counts a connection on its way to an event loop until `handedOver()`, so a stop waits
    /// for it; false (and nothing counted) when the server is stopping.
    func handingOver() -> Bool {
        state.withLockedValue { state in
            guard state.stop == nil else { return false }
            state.handingOver += 1
            return true
        }
    }

    /// Ends what `handingOver()` counted, once the connection was registered or dropped.
    func handedOver() {
        let waiters = state.withLockedValue { state in
            state.handingOver -= 1
            return state.takeWaitersIfDone()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Forgets a connection that has closed. One that closes once a hard stop has begun is cut
    /// off: `whenCutOff` records that before anyone waiting for the last connection is told.
    func remove(_ id: ID, whenCutOff: () -> Void) {
        let waiters = state.withLockedValue { state in
            if state.channels.removeValue(forKey: id) != nil, state.stop == .hard { whenCutOff() }
            return state.takeWaitersIfDone()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// How many connections are open.
    var count: Int {
        state.withLockedValue { $0.channels.count }
    }

    /// Starts a graceful stop: no new connection is taken, and every open one is told; how
    /// many were (none when the server was already stopping).
    @discardableResult
    func drain() -> Int {
        send(.graceful)
    }

    /// Ends every connection now, whatever it is doing: each is told to close (pending writes
    /// to a peer that stopped reading are dropped) and to cancel the call it is answering.
    /// Each connection that closes from then on reports what it was doing (`StopReport`).
    func closeAll() {
        _ = send(.hard)
    }

    private func send(_ stop: Stop) -> Int {
        let (channels, waiters) = state.withLockedValue { state in
            guard state.stop == nil || (state.stop == .graceful && stop == .hard) else {
                return ([any Channel](), [CheckedContinuation<Void, Never>]())
            }
            state.stop = stop
            return (Array(state.channels.values), state.takeWaitersIfDone())
        }
        for channel in channels { channel.pipeline.fireUserInboundEventTriggered(stop) }
        for waiter in waiters { waiter.resume() }
        return channels.count
    }

    /// Returns once a stop has begun and every connection has ended.
    func allEnded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state in
                state.waiters.append(continuation)
                return state.takeWaitersIfDone()
            }
            for waiter in done { waiter.resume() }
        }
    }
}
