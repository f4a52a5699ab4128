import Logging
import NIOCore

/// Serves one connection on its event loop, the calls in the order they arrived: a thin
/// `ChannelDuplexHandler` over `ConnectionStateMachine`, which decides, while this carries out
/// its steps on the channel. A call its interface can answer without waiting (`answerAtOnce`: a
/// token, an account, the service's info) is read, answered and written right here, with no task
/// and no hop to another thread; any other call, a large one and a streaming one are answered by
/// a task on the cooperative pool, and the calls behind it wait.
///
/// Every idle subscriber keeps one, so it is kept small: it splits the byte stream into messages
/// itself, with no `ByteToMessageHandler` in front (whose buffers and context cost 0.4 KiB), and
/// what all of a server's connections share is held once (`Shared`).
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
    /// What the connection is doing, and the call it is answering.
    var machine: ConnectionStateMachine
    /// The part of a message this connection holds, as its uid's allowance counts it.
    var unfinished = UnfinishedMessageWatch()
    var needsFlush = false
    /// Inside `channelRead`: writes are flushed once, at `channelReadComplete`.
    var reading = false

    init(shared: Shared, id: OpenConnections.ID, peer: PeerCredentials) {
        self.shared = shared
        self.machine = ConnectionStateMachine(maximumMessageSize: shared.maximumMessageSize)
        self.id = id
        self.peer = peer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let completed = machine.received(unwrapInboundIn(data))
        guard !machine.isEnding else { return }
        let held = unfinished.hold(
            machine.unfinishedBytes,
            completed: completed,
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
            streamEnded(ended, context: context)
            return
        }
        if let stop = event as? OpenConnections.Stop {
            stopping(stop, context: context)
            return
        }
        guard case .inputClosed = event as? ChannelEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // The peer sent all it will: what it sent is still answered, then the connection ends;
        // a streaming call, which has no end of its own, ends now (also on a connection
        // already ending).
        machine.inputEnded()
        machine.call?.peerHungUp()
        serveWaiting(context: context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let after = machine.peerMadeRoom() {
            callDone(after, context: context)
            serveWaiting(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A streaming call has no end of its own: the peer closing is how it ends.
        machine.call?.peerHungUp()
        if let unfinished = machine.closed() { logTruncated(bytes: unfinished) }
        context.fireChannelInactive()
    }

    /// The channel has closed and its pipeline is gone: called once, as the close completes.
    func handlerRemoved(context: ChannelHandlerContext) {
        machine.call?.stream?.leavePipeline()
        connectionEnded()
    }

    /// Lets go of what the connection held: its place among the open connections and the
    /// gate's slot. (Here rather than in a callback on the channel's close, which every idle
    /// subscriber would keep.)
    func connectionEnded() {
        unfinished.release(uid: peer.uid, in: shared.unfinished)
        // Given back before the connection is forgotten: once a stopped server's last
        // connection is gone, its admissions are all back.
        shared.gate?.release(peer)
        let (report, method) = (shared.stopReport, machine.call?.method)
        connections.remove(id) { report.cutOff(answering: method) }
        scope.closed()
        answerer.log(.debug, "connection closed", peer: peer)
    }

    func read(context: ChannelHandlerContext) {
        if machine.readRequested() { context.read() }
    }

    /// Makes the read that was asked for while reading was held back, if it may be made now.
    func readIfHeld(context: ChannelHandlerContext) {
        if machine.takeHeldRead() { context.read() }
    }

    /// Carries out the machine's steps with what has arrived until it has to wait, giving the
    /// loop to the other connections once this one has had its share of the turn.
    func serveWaiting(context: ChannelHandlerContext) {
        machine.turnBegins()
        serving: while true {
            switch machine.next() {
            case .parseOnLoop(let frame): parseAndStart(frame, context: context)
            case .parseOffLoop(let frame): parseOffLoop(frame, context: context)
            case .refuse(let error): framingFailed(error, context: context)
            case .end: end(context: context)
            case .wait: break serving
            }
            if machine.shouldYield() {
                yieldTheLoop(context: context)
                break serving
            }
        }
        readIfHeld(context: context)
        if !reading { flushIfNeeded(context: context) }
    }

    /// Lets the loop run the other connections' I/O before this one's calls go on.
    func yieldTheLoop(context: ChannelHandlerContext) {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = handler.value
            if handler.machine.resume() { handler.serveWaiting(context: context) }
        }
    }

    /// Parses a message on the loop and starts its call.
    func parseAndStart(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        do {
            dispatch(try VarlinkCall(frame: frame), mayAnswerAtOnce: true, context: context)
        } catch {
            refuse(error, context: context)
        }
    }

    /// Starts answering a call that has fully arrived.
    func dispatch(_ call: VarlinkCall, mayAnswerAtOnce: Bool, context: ChannelHandlerContext) {
        guard machine.callStarted(method: call.method, oneway: call.oneway, streaming: call.more) else { return }
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
        guard let after = machine.replied(peerHasRoom: context.channel.isWritable) else {
            flushIfNeeded(context: context)
            return
        }
        callDone(after, context: context)
    }

    /// The call was answered and its reply has room to leave.
    func callDone(_ after: ConnectionStateMachine.AfterCall, context: ChannelHandlerContext) {
        // A stopping server ends the connection now that its call is done.
        if case .endConnection = after { end(context: context) }
    }
}
