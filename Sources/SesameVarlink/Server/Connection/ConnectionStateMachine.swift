import NIOCore

/// What one connection is doing and what it does next, without its channel: the decisions of
/// `VarlinkConnectionHandler`, which feeds it what happens (bytes, the peer's end, a call
/// started or answered, the peer's room to read) and carries out the step it answers, as NIO's
/// own protocol handlers do. Calls are served one at a time in the order they arrived; while
/// one is off the loop, or its reply waits for the peer, nothing more is read (a streaming call
/// lets reading go on up to `streamingReadLimit`), so what piles up here stays bounded.
struct ConnectionStateMachine {
    /// Whether the next call may start.
    enum State: Equatable {
        /// Nothing is being answered.
        case ready
        /// A task answers a call, or parses a large one, off the loop; behind a streaming call
        /// reading goes on, so the calls behind it and the peer's end of input are seen.
        case offLoop(streaming: Bool)
        /// A reply was written but the peer is not reading: the call counts as being answered
        /// until the reply has room to leave.
        case waitingForPeer
        /// Enough calls were answered in a row: the rest wait for the loop's next turn, after
        /// the other connections that are ready.
        case yielding
        /// The connection closes once what was written has been sent.
        case ending
    }

    /// What the handler does next with what has arrived.
    enum Step {
        /// Parse the message and start its call here, on the loop.
        case parseOnLoop(ByteBuffer)
        /// Parse the message off the loop: it is large, or the connection has had its share of
        /// the loop. The state is `offLoop` until `parsedOffLoop`.
        case parseOffLoop(ByteBuffer)
        /// The byte stream could not be split into messages: answer why and end.
        case refuse(VarlinkFramingError)
        /// The peer has sent all it will, and all of it was answered: end.
        case end
        /// Nothing to do until something else happens.
        case wait
    }

    /// At most this many calls are answered in a row before the rest wait for the loop's next
    /// turn, so a peer that pipelines thousands of calls does not keep the loop from the others.
    static let callsInARow = 32
    /// How many bytes of messages one connection may have parsed on the loop before it has
    /// caught up with what it sent. Parsing costs in proportion to size, and a task the loop
    /// runs to yield runs before the loop looks at anyone's I/O again (NIO runs every task that
    /// is due in one tick): 32 wide messages of 64 KiB in a row held every other connection of
    /// the loop for 0.7 s in a debug build. Past this share, messages are parsed off the loop.
    static let bytesInARow = LargeMessageLane.threshold
    /// How much a peer may send behind a streaming call before reading stops.
    static let streamingReadLimit = 64 * 1024

    private(set) var state = State.ready
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

    var isEnding: Bool { state == .ending }

    /// The bytes held for a message still arriving.
    var unfinishedBytes: Int { splitter.heldBytes }

    /// The bytes of complete messages waiting to be served.
    var waitingBytes: Int { waiting.messageBytes }

    /// Whether more may be read now: when nothing is waiting to be served, or, behind a
    /// streaming call, until `streamingReadLimit` bytes wait.
    var mayRead: Bool {
        switch state {
        case .ready: waiting.isEmpty
        case .offLoop(let streaming): streaming && waiting.messageBytes < Self.streamingReadLimit
        case .waitingForPeer, .yielding, .ending: false
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

    /// The channel closed: what waits is dropped; the size of a message cut off, if any.
    mutating func closed() -> Int? {
        waiting.removeAll()
        return splitter.discardUnfinished()
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
        guard state == .ready, let inbound = waiting.popFirst() else { return .wait }
        servedInARow += 1
        switch inbound {
        case .message(let frame):
            let size = frame.readableBytes
            guard size <= LargeMessageLane.threshold, parsedOnLoop == 0 || parsedOnLoop + size <= Self.bytesInARow
            else {
                state = .offLoop(streaming: false)
                return .parseOffLoop(frame)
            }
            parsedOnLoop += size
            return .parseOnLoop(frame)
        case .framingFailed(let error): return .refuse(error)
        case .inputClosed: return .end
        }
    }

    /// Whether the connection has served its share of this turn and others wait their turn
    /// first; if so, the state is `yielding` until `resume`.
    mutating func shouldYield() -> Bool {
        guard state == .ready, servedInARow >= Self.callsInARow, !waiting.isEmpty else { return false }
        state = .yielding
        return true
    }

    /// The loop came back to a yielding connection; false if it ended meanwhile.
    mutating func resume() -> Bool {
        guard state == .yielding else { return false }
        state = .ready
        return true
    }

    // MARK: Calls

    /// A call is answered off the loop (or goes on streaming there).
    mutating func wentOffLoop(streaming: Bool) {
        state = .offLoop(streaming: streaming)
    }

    /// The call or parse off the loop is over; false when the connection is not waiting for
    /// one (it ended meanwhile).
    mutating func cameBackToLoop() -> Bool {
        guard case .offLoop = state else { return false }
        state = .ready
        return true
    }

    /// The final reply was written. If the peer is not reading, the call counts as being
    /// answered until it makes room (`peerMadeRoom`), and false is returned.
    mutating func replied(peerHasRoom: Bool) -> Bool {
        guard !peerHasRoom else { return true }
        state = .waitingForPeer
        return false
    }

    /// The peer's socket has room again; true when a reply was waiting for it, and its call is
    /// now done.
    mutating func peerMadeRoom() -> Bool {
        guard state == .waitingForPeer else { return false }
        state = .ready
        return true
    }

    /// The connection is to end; false if it is ending already. What waits is dropped.
    mutating func beginEnding() -> Bool {
        guard state != .ending else { return false }
        state = .ending
        waiting.removeAll()
        _ = splitter.discardUnfinished()
        return true
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
