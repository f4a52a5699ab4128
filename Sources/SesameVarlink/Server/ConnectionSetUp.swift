import CPeerCredentials
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

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

    /// Runs on the connection's event loop as it is accepted, before the channel is registered,
    /// so before its first read.
    func initialize(_ channel: any Channel) -> EventLoopFuture<Void> {
        guard let socket = channel as? SocketOptionProvider, let options = channel.syncOptions else {
            return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        // Set here, at once, rather than as the bootstrap's child options, which NIO applies
        // through a chain of futures: an eighth of the cost of a connection made for one call.
        do {
            // A peer that has sent all its calls and shut down its side still gets the replies.
            try options.setOption(.allowRemoteHalfClosure, value: true)
            try options.setOption(.recvAllocator, value: Self.receiveBuffers)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let credentials: EventLoopFuture<sesame_ucred> = socket.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.flatMapThrowing { credentials in
            let peer = PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
            try serve(channel, peer: peer)
        }
    }

    private func serve(_ channel: any Channel, peer: PeerCredentials) throws {
        answerer.log(.debug, "connection opened", peer: peer)
        if let gate = shared.gate, let refusal = gate.admit(peer) {
            answerer.log(.debug, "connection refused", peer: peer, metadata: ["error": "\(refusal.name)"])
            let lingers = lingering.withLockedValue { count in
                guard count < RefusedConnectionHandler.maximumLingering else { return false }
                count += 1
                return true
            }
            if lingers {
                let lingering = self.lingering
                channel.closeFuture.whenComplete { _ in lingering.withLockedValue { $0 -= 1 } }
            }
            try channel.pipeline.syncOperations.addHandler(RefusedConnectionHandler(refusal: refusal, lingers: lingers))
            return
        }
        guard let id = shared.connections.register(channel) else {
            answerer.log(.debug, "connection closed: the server is stopping", peer: peer)
            shared.gate?.release(peer)
            return
        }
        let handler = VarlinkConnectionHandler(shared: shared, id: id, peer: peer)
        do {
            try channel.pipeline.syncOperations.addHandler(handler)
        } catch {
            handler.connectionEnded()
            throw error
        }
    }
}

/// Answers a refused connection with its refusal, which the peer reads as the reply to its
/// first call. Closing at once could make the peer's first write fail (EPIPE) before it reads
/// the answer, so a connection that `lingers` is half-closed and what comes in is discarded
/// for up to a second. Only `maximumLingering` refused connections linger at a time; beyond
/// that they are closed once the answer is written, so a flood of them holds nothing here.
private final class RefusedConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let maximumLingering = 64

    private let refusal: VarlinkError
    private let lingers: Bool

    init(refusal: VarlinkError, lingers: Bool) {
        self.refusal = refusal
        self.lingers = lingers
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        let written = context.writeAndFlush(wrapOutboundOut(refusal.frame()))
        guard lingers else {
            written.whenComplete { _ in channel.close(promise: nil) }
            return
        }
        written.whenComplete { _ in
            channel.close(mode: .output, promise: nil)
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        }
        context.fireChannelActive()
    }

    /// Whatever the peer sends now is dropped unread, not gathered into messages.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
