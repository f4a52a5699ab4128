import CPeerCredentials
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What each accepted connection is given before it is read: the peer's credentials, the
/// gate's verdict, its place among the open connections, and its handlers.
struct ConnectionSetUp: Sendable {
    let shared: VarlinkConnectionHandler.Shared
    /// Refused connections still open while the peer reads its answer.
    let lingering = NIOLockedValueBox(0)

    private var answerer: CallAnswerer { shared.answerer }

    init(
        answerer: CallAnswerer,
        connections: OpenConnections,
        gate: (any VarlinkConnectionGate)?,
        maximumMessageSize: Int,
        unfinished: UnfinishedMessages
    ) {
        shared = VarlinkConnectionHandler.Shared(
            answerer: answerer,
            connections: connections,
            gate: gate,
            maximumMessageSize: maximumMessageSize,
            unfinished: unfinished
        )
    }

    /// Each connection keeps its last read buffer for the next read: NIO's default first guess,
    /// 2 KiB, was a quarter of what an idle subscriber cost. A call is about 100
    /// bytes; a read that fills the buffer makes the next one larger, so a busy connection soon
    /// reads more at once.
    private static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 128, maximum: 65536)

    /// Decides on a connection just accepted, on the accepting thread: a refused one is answered
    /// (`refuse`), an admitted one handed to an event loop to be served.
    func take(_ descriptor: Int32, peer: PeerCredentials) {
        answerer.log(.debug, "connection opened", peer: peer)
        if let gate = shared.gate, let refusal = gate.admit(peer) {
            refuse(descriptor, peer: peer, refusal: refusal)
            return
        }
        let (gate, connections) = (shared.gate, shared.connections)
        guard connections.handingOver() else {
            answerer.log(.debug, "connection closed: the server is stopping", peer: peer)
            close(descriptor)
            gate?.release(peer)
            return
        }
        Self.handOver(descriptor) { channel in
            defer { connections.handedOver() }
            return initialize(channel, peer: peer)
        } unmade: {
            gate?.release(peer)
            connections.handedOver()
        }
    }

    /// Hands `descriptor` to an event loop as a channel that `initialize` sets up there;
    /// when no channel could be made of it, the descriptor is closed and `unmade` runs instead.
    private static func handOver(
        _ descriptor: Int32,
        initialize: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>,
        unmade: @escaping @Sendable () -> Void
    ) {
        // The channel is made on its loop, not here: the accepting thread does no more per
        // connection than it must.
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        loop.execute {
            let made = NIOLockedValueBox(false)
            ClientBootstrap(group: loop)
                .channelInitializer { channel in
                    made.withLockedValue { $0 = true }
                    return initialize(channel)
                }
                .withConnectedSocket(descriptor)
                .whenFailure { _ in
                    // NIO owns the descriptor once it has made a channel of it, and closes it
                    // when setting that channel up fails. Before the initializer it only applies
                    // the bootstrap's default TCP_NODELAY, which NIO skips for a Unix socket, so a
                    // failure with no initializer run is one where no channel was made and the
                    // descriptor is still ours. An option added to this bootstrap could fail in
                    // between and have it closed twice: set options in `initialize` instead.
                    guard !made.withLockedValue({ $0 }) else { return }
                    close(descriptor)
                    unmade()
                }
        }
    }

    /// Runs on the connection's event loop before the channel is registered, so before its
    /// first read; a failure here gives the admission back.
    private func initialize(_ channel: any Channel, peer: PeerCredentials) -> EventLoopFuture<Void> {
        do {
            guard let options = channel.syncOptions else { throw ChannelError.operationUnsupported }
            // A peer that has sent all its calls and shut down its side still gets the replies.
            try options.setOption(.allowRemoteHalfClosure, value: true)
            try options.setOption(.recvAllocator, value: Self.receiveBuffers)
            guard let id = shared.connections.register(channel) else {
                answerer.log(.debug, "connection closed: the server is stopping", peer: peer)
                shared.gate?.release(peer)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            let handler = VarlinkConnectionHandler(shared: shared, id: id, peer: peer)
            do {
                try channel.pipeline.syncOperations.addHandler(handler)
            } catch {
                handler.connectionEnded()
                return channel.eventLoop.makeFailedFuture(error)
            }
            return channel.eventLoop.makeSucceededVoidFuture()
        } catch {
            shared.gate?.release(peer)
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// Answers a refused connection with its refusal. Up to `maximumLingering` at a time are
    /// served on an event loop until the peer has read it (`RefusedConnectionHandler`); beyond
    /// that the answer is written here and the connection closed at once, so a flood of them
    /// costs little more than the peer's own connects.
    private func refuse(_ descriptor: Int32, peer: PeerCredentials, refusal: VarlinkError) {
        answerer.log(.debug, "connection refused", peer: peer, metadata: ["error": "\(refusal.name)"])
        let lingers = lingering.withLockedValue { count in
            guard count < RefusedConnectionHandler.maximumLingering else { return false }
            count += 1
            return true
        }
        guard lingers else {
            refusal.frame().withUnsafeReadableBytes { bytes in
                _ = send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            }
            close(descriptor)
            return
        }
        let lingering = self.lingering
        Self.handOver(descriptor) { channel in
            channel.closeFuture.whenComplete { _ in lingering.withLockedValue { $0 -= 1 } }
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RefusedConnectionHandler(refusal: refusal))
            }
        } unmade: {
            lingering.withLockedValue { $0 -= 1 }
        }
    }
}

/// Answers a refused connection with its refusal, which the peer reads as the reply to its
/// first call. Closing at once could make the peer's first write fail (EPIPE) before it reads
/// the answer, so the connection is half-closed and what comes in is discarded for up to a
/// second. Only `maximumLingering` refused connections are served so at a time.
private final class RefusedConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let maximumLingering = 64

    private let refusal: VarlinkError

    init(refusal: VarlinkError) {
        self.refusal = refusal
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(refusal.frame())).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        }
        context.fireChannelActive()
    }

    /// Whatever the peer sends now is dropped unread, not gathered into messages.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
