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

/// A Varlink server on a Unix socket: answers `org.varlink.service` and the given interfaces,
/// one connection per task, the calls of one connection in the order they arrived.
public final class VarlinkServer: Sendable {
    /// Limits and identity of a server.
    public struct Configuration: Sendable {
        /// The largest message accepted from a peer, in bytes; over it, `MessageTooLarge` and a close.
        public var maximumMessageSize: Int
        /// What `org.varlink.service.GetInfo` reports.
        public var info: VarlinkServiceInfo
        /// Decides whether each new connection is served; none serves every connection.
        public var connectionGate: (any VarlinkConnectionGate)?
        /// The interface that names the server's own errors: `InvalidMessage`, `MessageTooLarge`
        /// and `InternalError` (e.g. `io.sesame.Varlink`).
        public var protocolInterface: String

        /// Creates a configuration.
        public init(
            maximumMessageSize: Int = 1 << 20,
            info: VarlinkServiceInfo,
            protocolInterface: String,
            connectionGate: (any VarlinkConnectionGate)? = nil
        ) {
            self.maximumMessageSize = maximumMessageSize
            self.info = info
            self.protocolInterface = protocolInterface
            self.connectionGate = connectionGate
        }
    }

    /// An accepted connection, not yet wrapped for async use: a `NIOAsyncChannel` made in the
    /// accept path traps if the server stops before reading it out of the listener's stream
    /// (swift-nio #2637), so wrapping waits until a task owns the connection.
    private typealias Connection = (channel: any Channel, peer: PeerCredentials)

    private let listener: NIOAsyncChannel<Connection, Never>
    private let interfaces: [String: any VarlinkInterface]
    private let gate: (any VarlinkConnectionGate)?
    private let protocolInterface: String
    /// Refused connections still open while the peer reads its answer.
    private let lingering = NIOLockedValueBox(0)
    /// The connections being served and what each is doing.
    private let connections = OpenConnections()
    private let largeMessages = LargeMessageLane()
    private let logger: Logger
    private let boundSocket: (path: String, identity: FileIdentity)?

    /// The endpoint this server was bound to.
    public let endpoint: VarlinkEndpoint

    private init(
        listener: NIOAsyncChannel<Connection, Never>,
        interfaces: [String: any VarlinkInterface],
        gate: (any VarlinkConnectionGate)?,
        protocolInterface: String,
        endpoint: VarlinkEndpoint,
        boundSocket: (path: String, identity: FileIdentity)?,
        logger: Logger
    ) {
        self.listener = listener
        self.interfaces = interfaces
        self.gate = gate
        self.protocolInterface = protocolInterface
        self.endpoint = endpoint
        self.boundSocket = boundSocket
        self.logger = logger
    }

    /// Binds (or adopts) the endpoint; once this returns, connections are accepted by the kernel
    /// and wait in the backlog until `run()` serves them.
    public static func bind(
        _ endpoint: VarlinkEndpoint,
        configuration: Configuration,
        interfaces: [any VarlinkInterface],
        logger: Logger
    ) async throws -> VarlinkServer {
        let maximumMessageSize = configuration.maximumMessageSize
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            // Nothing may be read before the connection is wrapped, or its first calls would be lost.
            .childChannelOption(.autoRead, value: false)
        let initializer: @Sendable (Channel) -> EventLoopFuture<Connection> = { channel in
            Self.initializeConnection(channel, maximumMessageSize: maximumMessageSize)
        }
        let listener: NIOAsyncChannel<Connection, Never>
        var boundSocket: (path: String, identity: FileIdentity)?
        switch endpoint {
        case .path(let path, let mode):
            try UnixSocketPath.prepare(path)
            listener = try await bootstrap.bind(unixDomainSocketPath: path, childChannelInitializer: initializer)
            try UnixSocketPath.setMode(path, mode: mode)
            boundSocket = UnixSocketPath.identity(of: path).map { (path, $0) }
        case .inheritedSocket(let descriptor):
            listener = try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
        }
        let service = VarlinkServiceInterface(info: configuration.info, interfaces: interfaces)
        var table: [String: any VarlinkInterface] = [service.name: service]
        for interface in interfaces {
            precondition(table[interface.name] == nil, "interface \(interface.name) registered twice")
            table[interface.name] = interface
        }
        return VarlinkServer(
            listener: listener,
            interfaces: table,
            gate: configuration.connectionGate,
            protocolInterface: configuration.protocolInterface,
            endpoint: endpoint,
            boundSocket: boundSocket,
            logger: logger
        )
    }

    /// Serves connections until `shutdown()` and the calls it lets finish are done, or until the
    /// task is cancelled, which ends every connection at once; then removes the socket file it bound.
    public func run() async throws {
        defer {
            if let boundSocket { UnixSocketPath.remove(boundSocket.path, ifStill: boundSocket.identity) }
        }
        // Every connection has ended by then: what a hard stop cut off is known in full.
        defer { logCutOff() }
        do {
            try await withTaskCancellationHandler {
                try await listener.executeThenClose { connections in
                    try await withThrowingDiscardingTaskGroup { group in
                        for try await connection in connections {
                            let executor = EventLoopExecutor(connection.channel.eventLoop)
                            group.addTask(executorPreference: executor) {
                                await self.serve(connection)
                            }
                        }
                        // The listener closed (`shutdown()` closes it): the connections still
                        // open drain, and the group waits for them.
                        _ = self.connections.drain()
                    }
                }
            } onCancel: {
                self.cutOff()
            }
        } catch is CancellationError {
            // Being cancelled is how a server is told to stop now; it is not a failure.
        }
    }

    /// Stops gracefully: no new connection is accepted and no new call started; idle connections,
    /// including any with half a call in them, are closed and streaming calls are cancelled at
    /// once; calls being answered may finish, then their connections close and `run()` returns.
    /// Cancelling `run()` bounds the wait: whatever is still open then is closed.
    public func shutdown() {
        let drained = connections.drain()
        logger.info(
            "stopping: no new connections or calls",
            metadata: [
                "idle_closed": "\(drained.idle)",
                "streaming_cancelled": "\(drained.streaming)",
                "calls_finishing": "\(drained.answering)",
            ]
        )
        listener.channel.close(promise: nil)
    }

    /// Ends every open connection at once.
    private func cutOff() {
        listener.channel.close(promise: nil)
        connections.closeAll()
    }

    /// Says which connections a hard stop cut off, and what they were doing.
    private func logCutOff() {
        let open = connections.takeCutOff()
        guard !open.isEmpty else { return }
        let calls = open.compactMap { $0 }
        logger.notice(
            "closed connections that had not finished",
            metadata: [
                "connections": "\(open.count)",
                "idle": "\(open.count - calls.count)",
                "calls": "\(calls.sorted().joined(separator: ","))",
            ]
        )
    }

    private static func initializeConnection(_ channel: Channel, maximumMessageSize: Int) -> EventLoopFuture<Connection>
    {
        guard let socket = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        let credentials: EventLoopFuture<sesame_ucred> = socket.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.flatMapThrowing { credentials in
            try channel.pipeline.syncOperations.addHandler(
                ByteToMessageHandler(VarlinkFrameDecoder(maximumMessageSize: maximumMessageSize))
            )
            return (channel, PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid))
        }
    }

    /// Wraps an accepted connection for async use and only then starts reading from it.
    private static func wrap(_ channel: any Channel) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        let wrap: @Sendable () throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> = {
            let wrapped = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            try channel.syncOptions?.setOption(.autoRead, value: true)
            return wrapped
        }
        // The connection's task runs on its event loop (`EventLoopExecutor`), so this is done
        // in place; the hop through `submit` is only for a task that runs elsewhere.
        if channel.eventLoop.inEventLoop { return try wrap() }
        return try await channel.eventLoop.submit(wrap).get()
    }

    private func serve(_ connection: Connection) async {
        let peer = connection.peer
        log(.debug, "connection opened", peer: peer)
        let channel = connection.channel
        if let gate, let refusal = gate.admit(connection.peer) {
            refuse(channel, with: refusal, peer: peer)
            return
        }
        defer { gate?.release(connection.peer) }
        guard let id = connections.register(channel) else {
            log(.debug, "connection closed: the server is stopping", peer: peer)
            return
        }
        defer { connections.remove(id, cancelled: Task.isCancelled) }
        let asyncChannel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            asyncChannel = try await Self.wrap(channel)
        } catch {
            log(.debug, "connection closed before it was served", peer: peer, metadata: ["reason": "\(error)"])
            channel.close(promise: nil)
            return
        }
        let connections = self.connections
        channel.closeFuture.whenComplete { _ in connections.cancelStreaming(id) }
        do {
            try await asyncChannel.executeThenClose { inbound, outbound in
                try await answerCalls(
                    inbound,
                    outbound,
                    channel: channel,
                    id: id,
                    peer: peer
                )
            }
        } catch {
            log(.debug, "connection ended", peer: peer, metadata: ["reason": "\(error)"])
            return
        }
        log(.debug, "connection closed", peer: peer)
    }

    /// Answers a refused connection with `refusal`, which the peer reads as the reply to its
    /// first call. Closing at once could make the peer's first write fail (EPIPE) before it
    /// reads the answer, so the server half-closes and discards what comes in for up to a
    /// second. Only `maximumLingering` refused connections linger at a time; beyond that they
    /// are closed at once, so a flood of them holds nothing here.
    private func refuse(_ channel: any Channel, with refusal: VarlinkError, peer: PeerCredentials) {
        log(.debug, "connection refused", peer: peer, metadata: ["error": "\(refusal.name)"])
        let lingers = lingering.withLockedValue { count in
            guard count < Self.maximumLingering else { return false }
            count += 1
            return true
        }
        let written = channel.writeAndFlush(refusal.frame())
        guard lingers else {
            written.whenComplete { _ in channel.close(promise: nil) }
            return
        }
        let lingering = self.lingering
        written.whenComplete { _ in
            channel.close(mode: .output, promise: nil)
            // Whatever the peer sends now is dropped unread, not gathered into messages.
            _ = try? channel.pipeline.syncOperations.addHandler(DiscardingHandler(), position: .first)
            channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in
                channel.read()
            }
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        }
        channel.closeFuture.whenComplete { _ in lingering.withLockedValue { $0 -= 1 } }
    }

    private static let maximumLingering = 64

    /// Answers the connection's calls in order until the peer leaves or the server stops: a
    /// stopping server starts no new call, and ends the connection once the current one is done.
    private func answerCalls(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>,
        _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        channel: any Channel,
        id: OpenConnections.ID,
        peer: PeerCredentials
    ) async throws {
        do {
            for try await frame in inbound {
                let call: VarlinkCall
                do {
                    call = try await largeMessages.call(from: frame)
                } catch {
                    log(
                        .notice,
                        "closing connection after an invalid message",
                        peer: peer,
                        metadata: ["error": "\(error)"]
                    )
                    try await outbound.write(error.varlinkError(in: protocolInterface).frame())
                    return
                }
                guard connections.begin(id, method: call.method) else { return }
                // Calls its interface declares non-blocking are answered on the connection's
                // event loop, which other connections share; any other call, and a large one
                // (decoding its parameters, encoding what it returns), on the cooperative pool,
                // so it delays nobody else.
                let isLarge = frame.readableBytes > LargeMessageLane.threshold
                guard call.more else {
                    if !isLarge, interfaces[call.interface]?.answersOnEventLoop(call) == true {
                        try await answer(call, outbound: outbound, peer: peer)
                    } else {
                        try await withTaskExecutorPreference(globalConcurrentExecutor) {
                            try await answer(call, outbound: outbound, peer: peer)
                        }
                    }
                    guard connections.end(id) else { return }
                    // Other connections' calls run between two of this one's, however many it
                    // has pipelined: each answer may complete without suspending, and a
                    // connection must not keep its event loop to itself.
                    await Task.yield()
                    continue
                }
                // A streaming call (a subscription) runs on the cooperative pool: an event wakes
                // every subscriber at once, and woken there they are spread over the pool's
                // threads with each write handed to its connection's loop; woken on the loops,
                // each wake-up took a loop's lock from the publisher's thread and the trigger's
                // own reply queued behind them (a third slower to 2,000 subscribers).
                let task = Task(executorPreference: globalConcurrentExecutor) {
                    try await self.answer(call, outbound: outbound, peer: peer)
                }
                connections.stream(id, method: call.method, task: task)
                if !channel.isActive { task.cancel() }
                try await withTaskCancellationHandler {
                    try await task.value
                } onCancel: {
                    task.cancel()
                }
                guard connections.end(id) else { return }
            }
        } catch VarlinkFramingError.messageTooLarge(let limit) {
            log(
                .notice,
                "closing connection after a message over the size limit",
                peer: peer,
                metadata: ["limit": "\(limit)"]
            )
            let error = VarlinkProtocolError.messageTooLarge(limit: limit)
            try await outbound.write(error.varlinkError(in: protocolInterface).frame())
        } catch VarlinkFramingError.truncatedMessage(let bytes) {
            log(.debug, "peer closed in the middle of a message", peer: peer, metadata: ["bytes": "\(bytes)"])
        }
    }

    private func answer(
        _ call: VarlinkCall,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        peer: PeerCredentials
    ) async throws {
        let context = VarlinkCallContext(peer: peer, logger: logger, outbound: outbound, call: call)
        let result: ByteBuffer
        do {
            guard let interface = interfaces[call.interface] else {
                throw VarlinkError.interfaceNotFound(call.interface)
            }
            result = try await interface.handle(call, context: context).frame(continues: false)
        } catch let error as VarlinkError {
            context.logger.debug("call failed", metadata: ["error": "\(error.name)"])
            result = error.frame()
        } catch let error as any VarlinkErrorConvertible {
            context.logger.debug("call failed", metadata: ["error": "\(error.varlinkError.name)"])
            result = error.varlinkError.frame()
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as ChannelError where error == .ioOnClosedChannel || error == .outputClosed {
            // The peer hung up while the call was still sending replies: how a client ends a
            // `more` call it no longer wants, not a failure.
            context.logger.debug("peer hung up during the call")
            throw error
        } catch {
            // Unknown errors may carry anything; only their type reaches the log, never the peer.
            context.logger.error("call failed unexpectedly", metadata: ["error_type": "\(type(of: error))"])
            result = VarlinkError(protocolInterface + ".InternalError").frame()
        }
        if !call.oneway {
            try await outbound.write(result)
        }
    }
}

extension VarlinkServer {
    /// Logs with the peer's identity as metadata, made only when the level is on: setting
    /// metadata on a logger costs (a stream handler renders it at once) and most connections
    /// log nothing at the default level.
    private func log(
        _ level: Logger.Level,
        _ message: @autoclosure () -> Logger.Message,
        peer: PeerCredentials,
        metadata: @autoclosure () -> Logger.Metadata = [:]
    ) {
        guard logger.logLevel <= level else { return }
        logger.log(level: level, message(), metadata: peer.logMetadata.merging(metadata()) { _, given in given })
    }
}

extension PeerCredentials {
    /// The peer's identity as log metadata.
    var logMetadata: Logger.Metadata {
        ["peer_uid": "\(uid)", "peer_pid": "\(pid)"]
    }
}

/// Drops every inbound byte and error of a refused connection while it lingers.
private final class DiscardingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
