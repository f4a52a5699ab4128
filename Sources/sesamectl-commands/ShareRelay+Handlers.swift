import CPeerCredentials
import FoundationEssentials
import NIOCore
import SesameProtocol

/// The first exchange on a share's connection to sesamed: sends `Join`, reads its reply, and
/// once sesamed accepted, passes what follows on unread. A refusal (the share ended) closes it.
final class JoinHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer
    /// Longer than any reply to `Join`: a daemon that says more is not one to relay to.
    private static let replyLimit = 64 * 1024

    private let frame: ByteBuffer
    private let accepted: EventLoopPromise<Void>
    private var reply: ByteBuffer?
    private var passing = false

    /// Sends `frame` (`Join`) and completes `accepted` when sesamed has said yes, or fails it.
    init(frame: ByteBuffer, accepted: EventLoopPromise<Void>) {
        self.frame = frame
        self.accepted = accepted
    }

    /// The `Join` call for `share`, naming the process the relay serves.
    static func frame(share: String, consumer: sesame_ucred) -> ByteBuffer {
        struct Call: Encodable {
            let method = SharesContract.join.qualifiedName
            let parameters: JoinShareParameters
        }
        let parameters = JoinShareParameters(
            share: share,
            consumerUid: Int(consumer.uid),
            consumerPid: Int(consumer.pid)
        )
        // Strings and numbers only: encoding cannot fail.
        var bytes = (try? JSONEncoder().encode(Call(parameters: parameters))) ?? Data()
        bytes.append(0)
        return ByteBuffer(bytes: bytes)
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard !passing else { return context.fireChannelRead(data) }
        reply.setOrWriteBuffer(&bytes)
        guard var held = reply, let end = held.readableBytesView.firstIndex(of: 0) else {
            if (reply?.readableBytes ?? 0) > Self.replyLimit { refuse(context) }
            return
        }
        let answer = held.readSlice(length: end - held.readerIndex)
        held.moveReaderIndex(forwardBy: 1)
        guard let answer, Self.isAcceptance(answer) else { return refuse(context) }
        passing = true
        reply = nil
        accepted.succeed()
        if held.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(held)) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        accepted.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // sesamed closed its side before it answered (it stops, say): half-closure is allowed on
        // this channel, so that comes as this event, not as the channel going inactive.
        if !passing, let event = event as? ChannelEvent, event == .inputClosed { return refuse(context) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        accepted.fail(error)
        context.fireErrorCaught(error)
    }

    private func refuse(_ context: ChannelHandlerContext) {
        accepted.fail(ChannelError.ioOnClosedChannel)
        context.close(promise: nil)
    }

    /// Whether sesamed's reply to `Join` is a reply, not an error.
    private static func isAcceptance(_ reply: ByteBuffer) -> Bool {
        struct Reply: Decodable { let error: String? }
        guard let decoded = try? JSONDecoder().decode(Reply.self, from: Data(reply.readableBytesView)) else {
            return false
        }
        return decoded.error == nil
    }
}

/// One of a pair of handlers that pass each other's channel's bytes on, each reading only while
/// the other can write (so a slow side holds the fast one back instead of piling bytes up), and
/// passing a half-close or close across. Both channels are on one event loop.
final class GlueHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var readPending = false

    private init() {}

    /// Two handlers, each the other's partner.
    static func matchedPair() -> (GlueHandler, GlueHandler) {
        let (first, second) = (GlueHandler(), GlueHandler())
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) { partner?.context?.flush() }

    func channelInactive(context: ChannelHandlerContext) { partner?.context?.close(promise: nil) }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            partner?.context?.close(mode: .output, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { partner?.context?.close(promise: nil) }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.readIfPending() }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable ?? false {
            context.read()
        } else {
            readPending = true
        }
    }

    private func readIfPending() {
        guard readPending, let context else { return }
        readPending = false
        context.read()
    }
}

/// Runs `body` once, when its channel becomes active, and then stands aside.
final class ActiveCallback: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let body: () -> Void

    /// A handler that runs `body` when the channel becomes active.
    init(_ body: @escaping () -> Void) {
        self.body = body
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        body()
    }
}
