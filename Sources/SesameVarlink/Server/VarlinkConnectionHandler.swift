import Logging
import NIOCore

/// Serves one connection on its event loop, the calls in the order they arrived. A call its
/// interface can answer without waiting (`answerAtOnce`: a token, an account, the service's
/// info) is read, answered and written right here, with no task and no hop to another thread;
/// any other call, a large one and a streaming one are answered by a task on the cooperative
/// pool, and the calls behind it wait. While a call is off the loop, or the peer is not reading
/// its replies, the connection asks for nothing more to be read: what piles up here is bounded
/// by what NIO reads in one turn (and, at the peer's end of input, by its socket buffer).
///
/// Every idle subscriber keeps one, so it is kept small (issue 13): it splits the byte stream
/// into messages itself, with no `ByteToMessageHandler` in front (whose buffers and context
/// cost 0.4 KiB), and what all of a server's connections share is held once (`Shared`).
final class VarlinkConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let shared: Shared
    var answerer: CallAnswerer { shared.answerer }
    var connections: OpenConnections { shared.connections }
    let id: OpenConnections.ID
    let peer: PeerCredentials
    let scope = ConnectionScope()
    var splitter: MessageSplitter

    var phase = Phase.ready
    /// The call off the loop is a streaming one: reading goes on meanwhile (within
    /// `streamingReadLimit`), so the calls behind it and the peer's end of input are seen.
    var streaming = false
    /// The peer has shut down its sending side.
    var inputClosed = false
    /// The stream the current streaming call goes on through, once its handler left it, and
    /// whether the call was `oneway` (its final reply, if it falls behind, is then not sent).
    var continuingStream: VarlinkReplyStream?
    var continuingOneway = false
    /// What arrived while a call was being answered; bounded, since no read is asked for until
    /// the queue is empty again (see the type's comment).
    var waiting = InboundQueue()
    /// The part of a message this connection holds, as its uid's allowance counts it.
    var unfinished = UnfinishedMessageWatch()
    /// Bytes of messages parsed on the loop since this connection last caught up (`bytesInARow`).
    var parsedOnLoop = 0
    /// A read was asked for while the connection was not ready; made when it is.
    var readDeferred = false
    var needsFlush = false
    /// Inside `channelRead`: writes are flushed once, at `channelReadComplete`.
    var reading = false

    init(shared: Shared, id: OpenConnections.ID, peer: PeerCredentials) {
        self.shared = shared
        self.splitter = MessageSplitter(maximumMessageSize: shared.maximumMessageSize)
        self.id = id
        self.peer = peer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let completedBefore = splitter.completed
        splitter.split(unwrapInboundIn(data), into: &waiting)
        guard !isEnding else { return }
        let held = unfinished.hold(
            splitter.heldBytes,
            completed: splitter.completed != completedBefore,
            uid: peer.uid,
            in: shared.unfinished,
            on: context.eventLoop,
            onTimeout: { unfinishedTimeout(context: context) }
        )
        guard held else {
            return closeForUnfinished("this user's unfinished messages would hold too many bytes", context: context)
        }
        serveWaiting(context: context)
    }

    /// What runs when a message stayed unfinished for the timeout. While nothing is read (a
    /// call ahead of it is being answered), the wait is not the peer's: the timer starts again.
    func unfinishedTimeout(context: ChannelHandlerContext) -> @Sendable () -> Void {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        return {
            let (handler, context) = handler.value
            guard handler.mayRead else {
                handler.unfinished.restart(
                    in: handler.shared.unfinished,
                    on: context.eventLoop,
                    onTimeout: handler.unfinishedTimeout(context: context)
                )
                return
            }
            handler.closeForUnfinished("a message stayed unfinished for too long", context: context)
        }
    }

    /// Ends a connection that holds part of a message it may not (`UnfinishedMessages`); the
    /// replies already written are still sent.
    func closeForUnfinished(_ reason: String, context: ChannelHandlerContext) {
        guard !isEnding else { return }
        answerer.notice(
            "closing connection: \(reason)",
            peer: peer,
            metadata: ["bytes": "\(splitter.heldBytes)", "user_bytes": "\(shared.unfinished.bytes(of: peer.uid))"]
        )
        unfinished.release(uid: peer.uid, in: shared.unfinished)
        end(context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        flushIfNeeded(context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answerer.log(.debug, "connection failed", peer: peer, metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let ended = event as? VarlinkReplyStream.Ended {
            if ended.stream === continuingStream { streamEnded(ended.ending, context: context) }
            return
        }
        guard case .inputClosed = event as? ChannelEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // The peer sent all it will: what it sent is still answered, then the connection ends;
        // a streaming call, which has no end of its own, ends now.
        splitter.endOfInput(into: &waiting)
        inputClosed = true
        continuingStream?.hangUp()
        if streaming { connections.cancelStreaming(id) }
        waiting.append(.inputClosed)
        serveWaiting(context: context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if case .waitingForPeer = phase, context.channel.isWritable {
            phase = .ready
            callDone(context: context)
            serveWaiting(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A streaming call has no end of its own: the peer closing is how it ends.
        continuingStream?.hangUp()
        connections.cancelStreaming(id)
        waiting.removeAll()
        if let unfinished = splitter.discardUnfinished() { logTruncated(bytes: unfinished) }
        context.fireChannelInactive()
    }

    /// The channel has closed and its pipeline is gone: called once, as the close completes.
    func handlerRemoved(context: ChannelHandlerContext) {
        continuingStream?.leavePipeline()
        continuingStream = nil
        connectionEnded()
    }

    /// Lets go of what the connection held: its place among the open connections and the
    /// gate's slot. (Here rather than in a callback on the channel's close, which every idle
    /// subscriber would keep, issue 13.)
    func connectionEnded() {
        unfinished.release(uid: peer.uid, in: shared.unfinished)
        connections.remove(id)
        shared.gate?.release(peer)
        answerer.log(.debug, "connection closed", peer: peer)
    }

    func read(context: ChannelHandlerContext) {
        if mayRead {
            context.read()
        } else {
            readDeferred = true
        }
    }

    /// Whether more may be read now: when nothing is waiting to be served, or, behind a
    /// streaming call, until `streamingReadLimit` bytes wait.
    var mayRead: Bool {
        switch phase {
        case .ready: waiting.isEmpty
        case .offLoop: streaming && waiting.messageBytes < Self.streamingReadLimit
        case .waitingForPeer, .yielding, .ending: false
        }
    }

    /// Makes the read that was asked for while reading was held back, if it may be made now.
    func readIfDeferred(context: ChannelHandlerContext) {
        guard readDeferred, mayRead else { return }
        readDeferred = false
        context.read()
    }

    /// How much a peer may send behind a streaming call before reading stops.
    static let streamingReadLimit = 64 * 1024

    /// Serves what has arrived until a call has to wait, then reads on if nothing is left.
    /// At most `callsInARow` are answered before the rest wait for the loop's next turn, so
    /// a peer that pipelines thousands of calls does not keep the loop from the others.
    func serveWaiting(context: ChannelHandlerContext) {
        var served = 0
        while case .ready = phase, let next = waiting.popFirst() {
            switch next {
            case .message(let frame): serve(frame, context: context)
            case .framingFailed(let error): framingFailed(error, context: context)
            case .inputClosed: end(context: context)
            }
            served += 1
            if served == Self.callsInARow, case .ready = phase, !waiting.isEmpty {
                yieldTheLoop(context: context)
            }
        }
        // Caught up: what comes next needs a read, which waits its turn among the loop's I/O.
        if waiting.isEmpty { parsedOnLoop = 0 }
        readIfDeferred(context: context)
        if !reading { flushIfNeeded(context: context) }
    }

    static let callsInARow = 32
    /// How many bytes of messages one connection may have parsed on the loop before it has
    /// caught up with what it sent. Parsing costs in proportion to size, and a task the loop
    /// runs to "yield" runs before the loop looks at anyone's I/O again (NIO runs every task
    /// that is due in one tick): 32 wide messages of 64 KiB in a row held every other
    /// connection of the loop for 0.7 s in a debug build. Past this share, a connection's
    /// messages are parsed on the large-message lane, off the loop.
    static let bytesInARow = LargeMessageLane.threshold

    func yieldTheLoop(context: ChannelHandlerContext) {
        phase = .yielding
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = handler.value
            guard case .yielding = handler.phase else { return }
            handler.phase = .ready
            handler.serveWaiting(context: context)
        }
    }

    func serve(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        // A large message, or one past this connection's share of the loop, is parsed and
        // answered off the loop, which other connections share.
        let size = frame.readableBytes
        guard size <= LargeMessageLane.threshold, parsedOnLoop == 0 || parsedOnLoop + size <= Self.bytesInARow else {
            parseOffLoop(frame, context: context)
            return
        }
        parsedOnLoop += size
        do {
            dispatch(try VarlinkCall(frame: frame), mayAnswerAtOnce: true, context: context)
        } catch {
            refuse(error, context: context)
        }
    }

    /// Starts answering a call that has fully arrived.
    func dispatch(_ call: VarlinkCall, mayAnswerAtOnce: Bool, context: ChannelHandlerContext) {
        guard connections.begin(id, method: call.method) else {
            // The server is stopping: no new call is started.
            end(context: context)
            return
        }
        if mayAnswerAtOnce, let reply = answerer.answerAtOnce(call, peer: peer, scope: scope) {
            replied(oneway: call.oneway, with: reply, context: context)
        } else {
            answerOffLoop(call, context: context)
        }
    }

    /// Writes the final reply (none for a `oneway` call) and ends the call, or waits for the
    /// peer to make room for it.
    func replied(oneway: Bool, with reply: ByteBuffer, context: ChannelHandlerContext) {
        if !oneway {
            context.write(wrapOutboundOut(reply), promise: nil)
            needsFlush = true
        }
        guard context.channel.isWritable else {
            phase = .waitingForPeer
            flushIfNeeded(context: context)
            return
        }
        callDone(context: context)
    }

    func callDone(context: ChannelHandlerContext) {
        guard connections.end(id) else {
            // The server is stopping: the connection ends now that its call is done.
            end(context: context)
            return
        }
    }
}
