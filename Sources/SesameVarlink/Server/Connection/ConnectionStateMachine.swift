import NIOCore

/// What one connection is doing and what it does next, without its channel: the decisions of
/// `VarlinkConnectionHandler`, which feeds it what happens (bytes, the peer's end, a call
/// started or answered, a stop, the peer's room to read) and carries out the step it answers,
/// as NIO's own protocol handlers do. What each state needs is held in that state's case: the
/// call being answered, with its task or stream, lives only while it is answered. Calls are
/// served one at a time in the order they arrived; while one is answered, or its reply waits
/// for the peer, nothing more is read (a streaming call lets reading go on up to
/// `streamingReadLimit`), so what piles up here stays bounded.
struct ConnectionStateMachine {
    /// Whether the next call may start, and what the one going on holds.
    enum State {
        /// Nothing is being answered.
        case idle
        /// A large message, or one past the connection's share of the loop, is parsed off it.
        case parsing
        /// A call is being answered: on the loop, by a task off it, or through a stream that
        /// goes on without one. Behind a streaming call reading goes on, so the calls behind it
        /// and the peer's end of input are seen.
        case answering(Call)
        /// The call's reply was written but the peer is not reading: the call counts as being
        /// answered until the reply has room to leave.
        case waitingForPeer(Call)
        /// Enough calls were answered in a row: the rest wait for the loop's next turn, after
        /// the other connections that are ready.
        case yielding
        /// The connection closes once what was written has been sent; the call it was
        /// answering, if any, as a stop reports it cut off.
        case ending(Call?)
        /// The channel has closed, or is closed at once (a stop, a peer that hung up on its
        /// call): nothing more starts on it; the call it was answering, as for `ending`.
        case closed(Call?)
    }

    /// At most this many calls are answered in a row before the rest wait for the loop's next
    /// turn, so a peer that pipelines thousands of calls does not keep the loop from the others.
    static let callsInARow = 32
    /// How many bytes of messages one connection may have parsed on the loop before it has
    /// caught up with what it sent; past this share, messages are parsed off the loop. Parsing
    /// costs in proportion to size, and a task the loop runs to yield runs before the loop looks
    /// at anyone's I/O again (NIO runs every task that is due in one tick), so yielding alone
    /// would let wide messages in a row hold every other connection of the loop.
    static let bytesInARow = LargeMessageLane.threshold
    /// How much a peer may send behind a streaming call before reading stops.
    static let streamingReadLimit = 64 * 1024

    private(set) var state = State.idle
    /// The peer has shut down its sending side.
    private(set) var inputClosed = false
    private var splitter: MessageSplitter
    /// What arrived and waits to be served, in order.
    private var waiting = InboundQueue()
    /// Bytes of messages parsed on the loop since this connection last caught up.
    private var parsedOnLoop = 0
    /// Calls served since the loop last gave this connection a turn.
    private var servedInARow = 0
    /// A read was asked for while none could be made; it is made once one can.
    private var readDeferred = false

    init(maximumMessageSize: Int) {
        splitter = MessageSplitter(maximumMessageSize: maximumMessageSize)
    }

    /// Whether the connection is ending or closed: no call starts on it again.
    var isEnding: Bool {
        switch state {
        case .ending, .closed: true
        case .idle, .parsing, .answering, .waitingForPeer, .yielding: false
        }
    }

    /// The call being answered (or cut off by the connection's end), if any.
    var call: Call? {
        switch state {
        case .answering(let call), .waitingForPeer(let call): call
        case .ending(let call), .closed(let call): call
        case .idle, .parsing, .yielding: nil
        }
    }

    /// The bytes held for a message still arriving.
    var unfinishedBytes: Int { splitter.heldBytes }

    /// The bytes of complete messages waiting to be served.
    var waitingBytes: Int { waiting.messageBytes }

    /// Whether more may be read now: when nothing is waiting to be served, or, behind a
    /// streaming call, until `streamingReadLimit` bytes wait.
    var mayRead: Bool {
        switch state {
        case .idle: waiting.isEmpty
        case .answering(let call): call.streaming && waiting.messageBytes < Self.streamingReadLimit
        case .parsing, .waitingForPeer, .yielding, .ending, .closed: false
        }
    }

    // MARK: What arrives

    /// Bytes from the peer; true when they completed a message (which shows progress).
    mutating func received(_ bytes: ByteBuffer) -> Bool {
        let completedBefore = splitter.completed
        splitter.split(bytes, into: &waiting)
        return splitter.completed != completedBefore
    }

    /// The peer sent all it will: a message it did not finish is a failure, queued after the
    /// calls before it, and the connection ends once those are answered.
    mutating func inputEnded() {
        splitter.endOfInput(into: &waiting)
        inputClosed = true
        waiting.append(.inputClosed)
    }

    /// The channel closed: what waits is dropped, and a parse or call that comes back from
    /// off the loop starts nothing more; the size of a message cut off, if any.
    mutating func closed() -> Int? {
        let unfinished = splitter.discardUnfinished()
        closeNow()
        return unfinished
    }

    // MARK: Serving

    /// Called before serving what waits, each time the loop gives this connection a turn.
    mutating func turnBegins() {
        servedInARow = 0
    }

    /// The next step with what has arrived.
    mutating func next() -> Step {
        // Caught up: what comes next needs a read, which waits its turn among the loop's I/O.
        if waiting.isEmpty { parsedOnLoop = 0 }
        guard case .idle = state, let inbound = waiting.popFirst() else { return .wait }
        servedInARow += 1
        switch inbound {
        case .message(let frame):
            let size = frame.readableBytes
            guard size <= LargeMessageLane.threshold, parsedOnLoop == 0 || parsedOnLoop + size <= Self.bytesInARow
            else {
                state = .parsing
                return .parseOffLoop(frame)
            }
            parsedOnLoop += size
            return .parseOnLoop(frame)
        case .framingFailed(let error): return .refuse(error)
        case .inputClosed: return .end
        }
    }

    /// The message parsed off the loop came back; false when the connection ended meanwhile.
    mutating func parsedOffLoop() -> Bool {
        guard case .parsing = state else { return false }
        state = .idle
        return true
    }

    /// Whether the connection has served its share of this turn and others wait their turn
    /// first; if so, the state is `yielding` until `resume`.
    mutating func shouldYield() -> Bool {
        guard case .idle = state, servedInARow >= Self.callsInARow, !waiting.isEmpty else { return false }
        state = .yielding
        return true
    }

    /// The loop came back to a yielding connection; false if it ended meanwhile.
    mutating func resume() -> Bool {
        guard case .yielding = state else { return false }
        state = .idle
        return true
    }

    /// The connection is to end, after the call it is answering if any; false if it is ending
    /// already. What waits is dropped.
    mutating func beginEnding() -> Bool {
        guard !isEnding else { return false }
        state = .ending(call)
        waiting.removeAll()
        _ = splitter.discardUnfinished()
        return true
    }

    /// The connection closes now: the state is `closed`, keeping the call it was answering.
    private mutating func closeNow() {
        state = .closed(call)
        waiting.removeAll()
        _ = splitter.discardUnfinished()
    }

    // MARK: Calls

    /// A call has been parsed and is answered now; false (start nothing) unless idle.
    mutating func callStarted(method: String, oneway: Bool, streaming: Bool) -> Bool {
        guard case .idle = state else { return false }
        state = .answering(Call(method: method, oneway: oneway, streaming: streaming))
        return true
    }

    /// The call is answered off the loop by `task`.
    mutating func answered(by task: Task<Void, Never>) {
        guard case .answering(var call) = state else { return }
        call.task = task
        state = .answering(call)
    }

    /// The call's task has ended and the call goes on through `stream` (whose method name is
    /// now `method`); true when the server is stopping and the stream is to be cancelled.
    mutating func continues(on stream: VarlinkReplyStream, method: String) -> Bool {
        guard case .answering(var call) = state else { return false }
        (call.task, call.stream, call.method) = (nil, stream, method)
        state = .answering(call)
        return call.isLast
    }

    /// `stream` has ended: the call it carried, if it is the one being answered, which now
    /// goes on through no stream.
    mutating func streamEnded(_ stream: VarlinkReplyStream) -> Call? {
        guard case .answering(var call) = state, call.stream === stream else { return nil }
        call.stream = nil
        state = .answering(call)
        return call
    }

    /// The final reply was written; nil while it waits for the peer to make room (until
    /// `peerMadeRoom`), else what follows the call.
    mutating func replied(peerHasRoom: Bool) -> AfterCall? {
        guard case .answering(let call) = state else { return nil }
        guard peerHasRoom else {
            state = .waitingForPeer(call)
            return nil
        }
        return callEnded(call)
    }

    /// The peer's socket has room again: what follows the call whose reply waited, if one did.
    mutating func peerMadeRoom() -> AfterCall? {
        guard case .waitingForPeer(let call) = state else { return nil }
        return callEnded(call)
    }

    /// The call was cancelled, or the peer hung up: true to serve what waits; false when the
    /// connection is to close now (the state is then `closed`), as nothing is owed to a peer
    /// that hung up and a stopping server does not wait for it to read.
    mutating func callAbandoned() -> Bool {
        guard case .answering(let call) = state else { return false }
        // After a hang-up, calls pipelined behind the abandoned one are not answered: their
        // replies would be read as the abandoned call's.
        if case .serveNext = callEnded(call), !inputClosed { return true }
        closeNow()
        return false
    }

    private mutating func callEnded(_ call: Call) -> AfterCall {
        state = .idle
        return call.isLast ? .endConnection : .serveNext
    }

    /// The server is stopping. Gracefully: an idle connection closes, a streaming call is
    /// cancelled, and a call being answered finishes, then its connection ends. Hard: the
    /// connection closes now and the call it was answering is cancelled.
    mutating func stopRequested(_ stop: OpenConnections.Stop) -> StopAction {
        switch (stop, state) {
        case (.hard, _):
            // Also on a closed connection: a call the peer hung up on is left to finish, until now.
            let call = call
            closeNow()
            return .closeNow(cancelling: call)
        case (.graceful, .closed):
            // Closed already: by the peer, or by a hard stop that came first (a graceful and a
            // hard stop sent from two threads can reach the loop in either order).
            return .nothing
        case (.graceful, .answering(var call)), (.graceful, .waitingForPeer(var call)):
            // The server sends each stop once; a second graceful one would be no news.
            guard !call.isLast else { return .nothing }
            call.isLast = true
            if case .answering = state { state = .answering(call) } else { state = .waitingForPeer(call) }
            return call.streaming ? .cancelStreaming(call) : .letFinish
        case (.graceful, .ending(let call?)):
            // Ending behind a call (a message it may not finish, cut off behind a stream).
            return call.streaming ? .cancelStreaming(call) : .letFinish
        case (.graceful, .ending(nil)), (.graceful, .idle), (.graceful, .parsing), (.graceful, .yielding):
            // Nothing is owed: replies an ending connection has not sent are dropped, as a peer
            // that stopped reading would otherwise hold the stop up.
            closeNow()
            return .closeNow(cancelling: nil)
        }
    }

    // MARK: Reading

    /// NIO asks to read; true to read now, or it is held until `takeHeldRead`.
    mutating func readRequested() -> Bool {
        if mayRead { return true }
        readDeferred = true
        return false
    }

    /// True when a read was held back and may be made now.
    mutating func takeHeldRead() -> Bool {
        guard readDeferred, mayRead else { return false }
        readDeferred = false
        return true
    }
}
