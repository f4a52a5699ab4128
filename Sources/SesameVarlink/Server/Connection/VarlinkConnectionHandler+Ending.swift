import NIOCore
import SesameWire

/// How a connection ends: after a protocol error, a failed frame or its peer's end of input,
/// once everything written has been sent.
extension VarlinkConnectionHandler {
    /// Answers a message that is not a call with `InvalidMessage`, and ends the connection.
    func refuse(_ error: VarlinkProtocolError, context: ChannelHandlerContext) {
        answerer.log(
            .notice,
            "closing connection after an invalid message",
            peer: peer,
            metadata: ["error": "\(error)"]
        )
        end(answering: error, context: context)
    }

    /// Sends the protocol error, then ends the connection.
    func end(answering error: VarlinkProtocolError, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(error.varlinkError(in: answerer.protocolInterface).frame()), promise: nil)
        needsFlush = true
        end(context: context)
    }

    func framingFailed(_ error: VarlinkFramingError, context: ChannelHandlerContext) {
        switch error {
        case .messageTooLarge(let limit):
            answerer.log(
                .notice,
                "closing connection after a message over the size limit",
                peer: peer,
                metadata: ["limit": "\(limit)"]
            )
            end(answering: .messageTooLarge(limit: limit), context: context)
        case .truncatedMessage(let bytes):
            logTruncated(bytes: bytes)
            end(context: context)
        }
    }

    func logTruncated(bytes: Int) {
        answerer.log(.debug, "peer closed in the middle of a message", peer: peer, metadata: ["bytes": "\(bytes)"])
    }

    /// Closes the connection once everything written has been sent.
    func end(context: ChannelHandlerContext) {
        guard machine.beginEnding() else { return }
        needsFlush = false
        // NIO completes writes in order, so an empty one completes once everything written
        // before it has been sent (or failed). A promise for that one write at the end, rather
        // than one kept for every reply.
        let channel = context.channel
        let sent = context.eventLoop.makePromise(of: Void.self)
        sent.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer()), promise: sent)
    }

    func flushIfNeeded(context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        context.flush()
    }
}
