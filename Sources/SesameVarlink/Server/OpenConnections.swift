import NIOConcurrencyHelpers
import NIOCore

/// The connections a server serves and what each is doing, so that stopping can treat them as
/// they deserve: an idle connection (or one with half a call in it) is closed at once, a
/// streaming call is cancelled, and a call being answered is left to finish, until a hard stop
/// closes whatever is still open. It also counts the tasks that answer calls off the event
/// loops, so a stopped server returns only once none is left.
final class OpenConnections: Sendable {
    /// Identifies one registered connection.
    struct ID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    /// What a connection is doing.
    enum Activity: Sendable {
        /// Waiting for the next call; bytes of an unfinished call may be buffered.
        case idle
        /// Answering a call with one reply; the task doing it when it is answered off the loop.
        case answering(method: String, task: Task<Void, Never>?)
        /// Answering a streaming call (`more`), which only ends when cancelled or done.
        case streaming(method: String, call: StreamingCall)
    }

    /// What a streaming call is cancelled through: the task answering it, or, once its handler
    /// has left it, the stream it goes on through. (Not a closure: every idle subscriber keeps
    /// one.)
    enum StreamingCall: Sendable {
        case task(Task<Void, Never>)
        case stream(VarlinkReplyStream)

        func cancel() {
            switch self {
            case .task(let task): task.cancel()
            case .stream(let stream): stream.cancel()
            }
        }

        var isStream: Bool {
            if case .stream = self { return true }
            return false
        }
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
        /// Tasks answering or parsing a call off the loops, still running.
        var runningTasks = 0
        /// Set by a hard stop: every connection removed from then on was cut off.
        var cuttingOff = false
        /// What each connection that was cut off was doing (nil for an idle one).
        var cutOff: [String?] = []
        /// Who waits for every connection and task to end after a stop.
        var waiters: [CheckedContinuation<Void, Never>] = []
        var methodNames = MethodNames()

        /// The waiters to resume, once stopping and nothing is left; none otherwise.
        mutating func takeWaitersIfDone() -> [CheckedContinuation<Void, Never>] {
            guard draining, entries.isEmpty, runningTasks == 0 else { return [] }
            defer { waiters = [] }
            return waiters
        }
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

    /// Forgets a connection that has closed; one that closes after a hard stop began is
    /// recorded as cut off, with what it was doing.
    func remove(_ id: ID) {
        let waiters = state.withLockedValue { state in
            if let entry = state.entries.removeValue(forKey: id), state.cuttingOff {
                state.cutOff.append(entry.activity.method)
            }
            return state.takeWaitersIfDone()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Marks the connection busy with a call that has fully arrived. False when the server is
    /// stopping: the call is not started and the connection should end.
    func begin(_ id: ID, method: String) -> Bool {
        state.withLockedValue { state in
            // One lookup: this and `end` run for every call.
            guard !state.draining, let index = state.entries.index(forKey: id) else { return false }
            state.entries.values[index].activity = .answering(method: method, task: nil)
            return true
        }
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

    /// Records the task answering the connection's current call; a streaming one (`more`) is
    /// cancelled at once if a stop began since `begin`.
    func answerOffLoop(_ id: ID, more: Bool, task: Task<Void, Never>) {
        guard more else {
            let cutOff = state.withLockedValue { state -> Bool in
                guard case .answering(let method, _) = state.entries[id]?.activity else { return state.cuttingOff }
                state.entries[id]?.activity = .answering(method: method, task: task)
                return state.cuttingOff
            }
            // A hard stop that began since `begin` found no task to cancel.
            if cutOff { task.cancel() }
            return
        }
        streaming(id, .task(task))
    }

    /// Records that the connection's streaming call goes on through `stream`, which its handler
    /// left it to; ended at once if a stop began meanwhile.
    func stream(_ id: ID, through stream: VarlinkReplyStream) {
        streaming(id, .stream(stream))
    }

    private func streaming(_ id: ID, _ call: StreamingCall) {
        let stopping = state.withLockedValue { state -> Bool in
            switch state.entries[id]?.activity {
            case .answering(let method, _), .streaming(let method, _):
                // A call left to a stream was taken by its interface, so its name is one of
                // theirs (a task's call may name anything, and lasts no longer than the task).
                let method = call.isStream ? state.methodNames.shared(method) : method
                state.entries[id]?.activity = .streaming(method: method, call: call)
            case .idle, nil:
                return false
            }
            return state.draining
        }
        if stopping { call.cancel() }
    }

    /// Cancels the streaming call of a connection whose peer hung up.
    func cancelStreaming(_ id: ID) {
        let call = state.withLockedValue { state -> StreamingCall? in
            guard case .streaming(_, let call) = state.entries[id]?.activity else { return nil }
            return call
        }
        call?.cancel()
    }

    /// Marks the connection idle after answering. False when the server is stopping: the
    /// connection should end now that its call is done. After a hard stop began the call keeps
    /// its name: it ended because it was cancelled, and its connection is reported cut off
    /// with it (a closed channel is removed only after the loop has run what was queued).
    func end(_ id: ID) -> Bool {
        state.withLockedValue { state in
            guard let index = state.entries.index(forKey: id) else { return false }
            if !state.cuttingOff { state.entries.values[index].activity = .idle }
            return !state.draining
        }
    }

    /// Starts a graceful stop: no new connection or call is taken, idle connections are closed,
    /// streaming calls are cancelled, and calls being answered are left to finish.
    func drain() -> Drained {
        var drained = Drained()
        let (idle, streaming, waiters) = state.withLockedValue { state in
            state.draining = true
            var idle: [any Channel] = []
            var streaming: [StreamingCall] = []
            for entry in state.entries.values {
                switch entry.activity {
                case .idle: idle.append(entry.channel)
                case .answering: drained.answering += 1
                case .streaming(_, let call): streaming.append(call)
                }
            }
            return (idle, streaming, state.takeWaitersIfDone())
        }
        drained.idle = idle.count
        drained.streaming = streaming.count
        for channel in idle { channel.close(promise: nil) }
        for call in streaming { call.cancel() }
        for waiter in waiters { waiter.resume() }
        return drained
    }

    /// Ends every connection now, whatever it is doing: the channel is closed (pending writes to
    /// a peer that stopped reading are dropped) and the task answering its call is cancelled.
    /// What each was doing is recorded as it closes; `takeCutOff()` tells once all have.
    func closeAll() {
        let (entries, waiters) = state.withLockedValue { state in
            state.draining = true
            state.cuttingOff = true
            return (Array(state.entries.values), state.takeWaitersIfDone())
        }
        for entry in entries {
            entry.channel.close(promise: nil)
            entry.activity.cancel()
        }
        for waiter in waiters { waiter.resume() }
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

extension OpenConnections.Activity {
    /// The method being answered, nil when idle.
    fileprivate var method: String? {
        switch self {
        case .idle: nil
        case .answering(let method, _), .streaming(let method, _): method
        }
    }

    /// Cancels the call being answered off the loop, if any.
    fileprivate func cancel() {
        switch self {
        case .idle: break
        case .answering(_, let task): task?.cancel()
        case .streaming(_, let call): call.cancel()
        }
    }
}

/// The names of the methods whose calls went on through a stream, so that every live streaming
/// call keeps one shared copy of its method's name instead of its own (64 bytes per
/// idle subscriber). Only names an interface took are offered, and the table is bounded all
/// the same (`limit` names of at most `longest` bytes): past that a name is kept as it is.
private struct MethodNames {
    static let limit = 64
    static let longest = 256
    private var names: Set<String> = []

    /// `name`, as the copy already kept if there is one.
    mutating func shared(_ name: String) -> String {
        if let index = names.firstIndex(of: name) { return names[index] }
        if names.count < Self.limit, name.utf8.count <= Self.longest { names.insert(name) }
        return name
    }
}
