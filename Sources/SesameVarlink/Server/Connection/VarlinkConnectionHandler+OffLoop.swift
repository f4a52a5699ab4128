import NIOCore
import SesameWire

/// Calls answered off the event loop: by a task on the pool, through a stream that goes on
/// without one, or parsed on the large-message lane first.
extension VarlinkConnectionHandler {
    func answerOffLoop(_ call: VarlinkCall, context: ChannelHandlerContext) {
        machine.wentOffLoop(streaming: call.more)
        readIfHeld(context: context)
        flushIfNeeded(context: context)
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let (answerer, peer, scope) = (self.answerer, self.peer, self.scope)
        let outbound = ReplyWriter(channel: context.channel)
        let task = connections.startTask { [eventLoop = context.eventLoop] in
            let answer = await answerer.answer(call, outbound: outbound, peer: peer, scope: scope)
            eventLoop.execute {
                let (handler, context) = handler.value
                handler.answeredOffLoop(call, with: answer, context: context)
            }
        }
        current?.task = task
    }

    func answeredOffLoop(
        _ call: VarlinkCall,
        with answer: CallAnswerer.Answer,
        context: ChannelHandlerContext
    ) {
        guard case .offLoop = machine.state else {
            // The connection ended while its call was off the loop (a hard stop, or an error
            // behind a streaming call): a stream nobody reads must still end, so that what
            // waits for its end lets go.
            if case .continuing(let stream) = answer { stream.hangUp() }
            return
        }
        switch answer {
        case .reply(let reply):
            _ = machine.cameBackToLoop()
            replied(oneway: call.oneway, with: reply, context: context)
            serveWaiting(context: context)
        case .nothing:
            callAbandoned(context: context)
        case .continuing(let stream):
            // The call goes on through the stream, still off the loop, with no task; reading
            // goes on meanwhile, as behind any streaming call. Its end comes back as `Ended`.
            continuingStream = stream
            continuingOneway = call.oneway
            stream.enterPipeline(at: context)
            // Its task has ended; the call was taken by its interface, so its name is one of
            // theirs, and every subscriber of it can share one copy.
            current = CallInProgress(method: shared.sharedName(call.method), streaming: true)
            // The server began stopping, the peer hung up, or the connection closed, while the
            // handler was handing its call over.
            if stop != nil { stream.cancel() }
            if machine.inputClosed || !context.channel.isActive { stream.hangUp() }
            if let ending = stream.ending {
                streamEnded(ending, context: context)
            } else {
                readIfHeld(context: context)
            }
        }
    }

    /// The stream of the current streaming call ended: the call is over.
    func streamEnded(_ ending: VarlinkReplyStream.Ending, context: ChannelHandlerContext) {
        guard case .offLoop = machine.state, let stream = continuingStream else { return }
        continuingStream = nil
        stream.leavePipeline()
        guard case .fellBehind = ending else {
            callAbandoned(context: context)
            return
        }
        // Spent from the connection's budget, not the calls': a caller's own calls (thousands
        // of imports, say) would otherwise hold back the one line that says why it was cut off.
        answerer.log(
            .notice,
            "streaming call's peer fell behind and was cut off",
            peer: peer,
            metadata: ["method": "\(current?.method ?? "-")", "error": "\(stream.errorWhenBehind.name)"]
        )
        _ = machine.cameBackToLoop()
        replied(oneway: continuingOneway, with: stream.errorWhenBehind.frame(), context: context)
        serveWaiting(context: context)
    }

    /// The call was cancelled, or the peer hung up: nothing is owed to it, and a stopping server
    /// does not wait for it to read what is still buffered.
    func callAbandoned(context: ChannelHandlerContext) {
        _ = machine.cameBackToLoop()
        // After a hang-up, calls pipelined behind the abandoned one are not answered: their
        // replies would be read as the abandoned call's.
        if callEnded(), !machine.inputClosed {
            serveWaiting(context: context)
        } else {
            _ = machine.beginEnding()
            context.close(promise: nil)
        }
    }

    /// Parses a message on the large-message lane; the machine waits for it meanwhile.
    func parseOffLoop(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let largeMessages = shared.largeMessages
        _ = connections.startTask { [eventLoop = context.eventLoop] in
            let parsed = await largeMessages.parse(frame)
            eventLoop.execute {
                let (handler, context) = handler.value
                handler.parsedOffLoop(parsed, context: context)
            }
        }
    }

    func parsedOffLoop(_ parsed: Result<VarlinkCall, VarlinkProtocolError>, context: ChannelHandlerContext) {
        guard machine.cameBackToLoop() else { return }
        switch parsed {
        case .success(let call): dispatch(call, mayAnswerAtOnce: false, context: context)
        case .failure(let error): refuse(error, context: context)
        }
        serveWaiting(context: context)
    }
}
