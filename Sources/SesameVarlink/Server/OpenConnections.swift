import NIOConcurrencyHelpers
import NIOCore

/// The connections a server has open, so that a stop reaches each of them, and the tasks that
/// answer calls off the event loops, so that a stopped server returns only once none is left;
/// and what the connections report of a stop. What a connection is doing is its handler's alone (`VarlinkConnectionHandler`): a stop is
/// sent down each connection's pipeline (`Stop`), and the handler acts on it on its own loop.
/// An idle connection (or one with half a call in it) is closed at once, a streaming call is
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

    /// What a graceful stop found, as each connection reports it on its loop.
    struct Drained: Sendable, Equatable {
        /// Idle connections, closed.
        var idle = 0
        /// Streaming calls, cancelled.
        var streaming = 0
        /// Calls being answered, left to finish.
        var answering = 0
    }

    private struct State {
        var channels: [ID: any Channel] = [:]
        var nextID: UInt64 = 0
        var stop: Stop?
        /// Tasks answering or parsing a call off the loops, still running.
        var runningTasks = 0
        /// Connections accepted and on their way to an event loop, not yet registered.
        var handingOver = 0
        var drained = Drained()
        /// What each connection that a hard stop cut off was doing (nil for an idle one).
        var cutOff: [String?] = []
        /// Who waits for every connection and task to end after a stop.
        var waiters: [CheckedContinuation<Void, Never>] = []

        /// The waiters to resume, once stopping and nothing is left; none otherwise.
        mutating func takeWaitersIfDone() -> [CheckedContinuation<Void, Never>] {
            guard stop != nil, channels.isEmpty, runningTasks == 0, handingOver == 0 else { return [] }
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

    /// Forgets a connection that has closed. One that closes after a hard stop began is
    /// recorded as cut off, with the method of the call it was answering (nil when idle).
    func remove(_ id: ID, answering method: String?) {
        let waiters = state.withLockedValue { state in
            if state.channels.removeValue(forKey: id) != nil, state.stop == .hard {
                state.cutOff.append(method)
            }
            return state.takeWaitersIfDone()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `work` in a task on the cooperative pool, counted until it ends.
    func startTask(_ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        state.withLockedValue { $0.runningTasks += 1 }
        return Task(executorPreference: globalConcurrentExecutor) {
            await work()
            let waiters = self.state.withLockedValue { state in
                state.runningTasks -= 1
                return state.takeWaitersIfDone()
            }
            for waiter in waiters { waiter.resume() }
        }
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
    /// What each was doing is recorded as it closes; `takeCutOff()` tells once all have.
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

    /// A connection's report of what a graceful stop found it doing.
    func drained(_ tally: (inout Drained) -> Void) {
        state.withLockedValue { tally(&$0.drained) }
    }

    /// What the graceful stop found, as reported so far.
    var drainedSoFar: Drained {
        state.withLockedValue { $0.drained }
    }

    /// Returns once a stop has begun and every connection and task has ended.
    func allEnded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state in
                state.waiters.append(continuation)
                return state.takeWaitersIfDone()
            }
            for waiter in done { waiter.resume() }
        }
    }

    /// The connections cut off by a hard stop, by the method each was answering (nil for idle
    /// ones); empties the record.
    func takeCutOff() -> [String?] {
        state.withLockedValue { state in
            defer { state.cutOff = [] }
            return state.cutOff
        }
    }
}
