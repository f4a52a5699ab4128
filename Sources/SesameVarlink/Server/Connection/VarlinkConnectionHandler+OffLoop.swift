import NIOCore
import SesameWire

/// Calls answered off the event loop: by a task on the pool, through a stream that goes on
/// without one, or parsed on the large-message lane first.
extension VarlinkConnectionHandler {
    func answerOffLoop(_ call: VarlinkCall, context: ChannelHandlerContext) {
        readIfHeld(context: context)
        flushIfNeeded(context: context)
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let (answerer, peer, scope) = (self.answerer, self.peer, self.scope)
        let outbound = ReplyWriter(channel: context.channel)
        let task = shared.tasks.start { [eventLoop = context.eventLoop] in
            let answer = await answerer.answer(call, outbound: outbound, peer: peer, scope: scope)
            eventLoop.execute {
                let (handler, context) = handler.value
                handler.answeredOffLoop(call, with: answer, context: context)
            }
        }
        machine.answered(by: task)
    }

    func answeredOffLoop(
        _ call: VarlinkCall,
        with answer: CallAnswerer.Answer,
        context: ChannelHandlerContext
    ) {
        guard case .answering = machine.state else {
            // The connection ended while its call was off the loop (a hard stop, or an error
            // behind a streaming call): a stream nobody reads must still end, so that what
            // waits for its end lets go.
            if case .continuing(let stream) = answer { stream.hangUp() }
            return
        }
        switch answer {
        case .reply(let reply):
            replied(oneway: call.oneway, with: reply, context: context)
            serveWaiting(context: context)
        case .nothing:
            callAbandoned(context: context)
        case .continuing(let stream):
            // The call goes on through the stream, still off the loop, with no task; reading
            // goes on meanwhile, as behind any streaming call. Its end comes back as `Ended`.
            // The call was taken by its interface, so its name is one of theirs, and every
            // subscriber of it can share one copy.
            stream.enterPipeline(at: context)
            let stopping = machine.continues(on: stream, method: shared.sharedName(call.method))
            // The server began stopping, the peer hung up, or the connection closed, while the
            // handler was handing its call over.
            if stopping { stream.cancel() }
            if machine.inputClosed || !context.channel.isActive { stream.hangUp() }
            if let ending = stream.ending {
                streamEnded(VarlinkReplyStream.Ended(stream: stream, ending: ending), context: context)
            } else {
                readIfHeld(context: context)
            }
        }
    }

    /// A stream ended: if it carried the current call, the call is over.
    func streamEnded(_ ended: VarlinkReplyStream.Ended, context: ChannelHandlerContext) {
        guard let call = machine.streamEnded(ended.stream) else { return }
        ended.stream.leavePipeline()
        guard case .fellBehind = ended.ending else {
            callAbandoned(context: context)
            return
        }
        // Spent from the connection's budget, not the calls': a caller's own calls (thousands
        // of imports, say) would otherwise hold back the one line that says why it was cut off.
        answerer.log(
            .notice,
            "streaming call's peer fell behind and was cut off",
            peer: peer,
            metadata: ["method": "\(call.method)", "error": "\(ended.stream.errorWhenBehind.name)"]
        )
        replied(oneway: call.oneway, with: ended.stream.errorWhenBehind.frame(), context: context)
        serveWaiting(context: context)
    }

    /// The call was cancelled, or the peer hung up: nothing is owed to it, and a stopping server
    /// does not wait for it to read what is still buffered.
    func callAbandoned(context: ChannelHandlerContext) {
        if machine.callAbandoned() {
            serveWaiting(context: context)
        } else {
            needsFlush = false
            context.close(promise: nil)
        }
    }

    /// Parses a message on the large-message lane; the machine waits for it meanwhile.
    func parseOffLoop(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let largeMessages = shared.largeMessages
        _ = shared.tasks.start { [eventLoop = context.eventLoop] in
            let parsed = await largeMessages.parse(frame)
            eventLoop.execute {
                let (handler, context) = handler.value
                handler.parsedOffLoop(parsed, context: context)
            }
        }
    }

    func parsedOffLoop(_ parsed: Result<VarlinkCall, VarlinkProtocolError>, context: ChannelHandlerContext) {
        guard machine.parsedOffLoop() else { return }
        switch parsed {
        case .success(let call): dispatch(call, mayAnswerAtOnce: false, context: context)
        case .failure(let error): refuse(error, context: context)
        }
        serveWaiting(context: context)
    }
}
