import NIOConcurrencyHelpers
import NIOCore

/// The connections a server serves and what each is doing, so that stopping can treat them as
/// they deserve: an idle connection (or one with half a call in it) is closed at once, a
/// streaming call is cancelled, and a call being answered is left to finish, until a hard stop
/// closes whatever is still open.
final class OpenConnections: Sendable {
    /// Identifies one registered connection.
    struct ID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    /// What a connection is doing.
    enum Activity: Sendable {
        /// Waiting for the next call; bytes of an unfinished call may be buffered.
        case idle
        /// Answering a call with one reply.
        case answering(method: String)
        /// Answering a streaming call (`more`), which only ends when cancelled or done.
        case streaming(method: String, task: Task<Void, any Error>)
    }

    /// What a graceful stop did.
    struct Drained: Sendable {
        /// Idle connections, closed.
        var idle = 0
        /// Streaming calls, cancelled.
        var streaming = 0
        /// Calls being answered, left to finish.
        var answering = 0
    }

    private struct Entry {
        var channel: any Channel
        var activity: Activity
    }

    private struct State {
        var entries: [ID: Entry] = [:]
        var nextID: UInt64 = 0
        var draining = false
        /// Set by a hard stop: every connection removed from then on was cut off.
        var cuttingOff = false
        /// What each connection that was cut off was doing (nil for an idle one).
        var cutOff: [String?] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Registers a new connection as idle; nil (and the channel closed) when the server is stopping.
    func register(_ channel: any Channel) -> ID? {
        let id = state.withLockedValue { state -> ID? in
            guard !state.draining else { return nil }
            let id = ID(value: state.nextID)
            state.nextID += 1
            state.entries[id] = Entry(channel: channel, activity: .idle)
            return id
        }
        if id == nil { channel.close(promise: nil) }
        return id
    }

    /// Forgets a connection that has ended. One that ends after a hard stop began, or whose task
    /// was `cancelled` (which only a hard stop does), is recorded as cut off with what it was
    /// doing: a hard stop cancels the connections' tasks concurrently with `closeAll()`, and a
    /// connection may end of its cancellation before `closeAll()` could see it.
    func remove(_ id: ID, cancelled: Bool) {
        state.withLockedValue { state in
            guard let entry = state.entries.removeValue(forKey: id) else { return }
            if state.cuttingOff || cancelled {
                state.cutOff.append(entry.activity.method)
            }
        }
    }

    /// Marks the connection busy with a call that has fully arrived. False when the server is
    /// stopping: the call is not started and the connection should end.
    func begin(_ id: ID, method: String) -> Bool {
        state.withLockedValue { state in
            guard state.entries[id] != nil, !state.draining else { return false }
            state.entries[id]?.activity = .answering(method: method)
            return true
        }
    }

    /// Records the task of the streaming call the connection now answers, cancelled at once if a
    /// stop began since `begin`.
    func stream(_ id: ID, method: String, task: Task<Void, any Error>) {
        let stopping = state.withLockedValue { state in
            state.entries[id]?.activity = .streaming(method: method, task: task)
            return state.draining
        }
        if stopping { task.cancel() }
    }

    /// Cancels the streaming call of a connection whose peer hung up: while a streaming call
    /// runs nothing reads the socket, so the channel closing is how the hang-up is seen.
    func cancelStreaming(_ id: ID) {
        let task = state.withLockedValue { state -> Task<Void, any Error>? in
            guard case .streaming(_, let task) = state.entries[id]?.activity else { return nil }
            return task
        }
        task?.cancel()
    }

    /// Marks the connection idle after answering. False when the server is stopping: the
    /// connection should end now that its call is done.
    func end(_ id: ID) -> Bool {
        state.withLockedValue { state in
            state.entries[id]?.activity = .idle
            return !state.draining && state.entries[id] != nil
        }
    }

    /// Starts a graceful stop: no new connection or call is taken, idle connections are closed,
    /// streaming calls are cancelled, and calls being answered are left to finish.
    func drain() -> Drained {
        var drained = Drained()
        let (idle, streaming) = state.withLockedValue { state -> ([any Channel], [Task<Void, any Error>]) in
            state.draining = true
            var idle: [any Channel] = []
            var streaming: [Task<Void, any Error>] = []
            for entry in state.entries.values {
                switch entry.activity {
                case .idle: idle.append(entry.channel)
                case .answering: drained.answering += 1
                case .streaming(_, let task): streaming.append(task)
                }
            }
            return (idle, streaming)
        }
        drained.idle = idle.count
        drained.streaming = streaming.count
        for channel in idle { channel.close(promise: nil) }
        for task in streaming { task.cancel() }
        return drained
    }

    /// Ends every connection now, whatever it is doing: the channel is closed (pending writes to
    /// a peer that stopped reading are dropped) and a streaming call is cancelled. What each was
    /// doing is recorded as it ends; `takeCutOff()` tells once they all have.
    func closeAll() {
        let entries = state.withLockedValue { state in
            state.draining = true
            state.cuttingOff = true
            return Array(state.entries.values)
        }
        for entry in entries {
            entry.channel.close(promise: nil)
            if case .streaming(_, let task) = entry.activity { task.cancel() }
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

extension OpenConnections.Activity {
    /// The method being answered, nil when idle.
    fileprivate var method: String? {
        switch self {
        case .idle: nil
        case .answering(let method), .streaming(let method, _): method
        }
    }
}
