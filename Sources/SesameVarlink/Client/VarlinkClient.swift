import NIOCore
import NIOPosix
import SesameWire

/// Why a client call did not get a reply.
public enum VarlinkClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing listens at the socket path (the daemon is not running, or the path is wrong).
    case cannotConnect(path: String, reason: String)
    /// Something listens, or the path exists, but the caller may not connect (EACCES, EPERM):
    /// the socket's or a directory's permissions keep this user out.
    case accessDenied(path: String)
    /// The server listens but its queue of connections not yet accepted stayed full (EAGAIN)
    /// for as long as the client kept trying: it is busy, not gone.
    case busy(path: String)
    /// The connection closed before the reply arrived.
    case connectionClosed
    /// The server sent something that is not a Varlink reply.
    case invalidReply(String)

    /// How a connect to `path` that failed with `error` is reported: a full queue (EAGAIN) is a
    /// busy server, not a missing one.
    init(connecting path: String, _ error: IOError) {
        switch error.errnoCode {
        case EAGAIN: self = .busy(path: path)
        case EACCES, EPERM: self = .accessDenied(path: path)
        default: self = .cannotConnect(path: path, reason: error.description)
        }
    }

    public var description: String {
        switch self {
        case .cannotConnect(let path, let reason): "cannot connect to \(path): \(reason)"
        case .accessDenied(let path): "permission denied on \(path)"
        case .busy(let path): "\(path) is too busy to take a connection"
        case .connectionClosed: "the connection closed before the reply arrived"
        case .invalidReply(let reason): "the server sent an invalid reply: \(reason)"
        }
    }
}

/// A Varlink client on one Unix-socket connection. Calls may be made concurrently; they are
/// pipelined on the connection and each gets its own reply, because replies come back in call order.
public actor VarlinkClient {
    private enum Pending {
        case single(CheckedContinuation<VarlinkReplyMessage, any Error>)
        case stream(AsyncThrowingStream<VarlinkReplyMessage, any Error>.Continuation)
    }

    private let channel: any Channel
    private let writes: AsyncStream<ByteBuffer>.Continuation
    private var pending: [Pending] = []
    private var pendingHead = 0
    private var closedError: (any Error)?
    /// Set by `close()`: whatever the connection does after that (a reply cut off mid-message
    /// included) is the closing, not a fault of the server.
    private var closing = false

    private init(channel: any Channel, writes: AsyncStream<ByteBuffer>.Continuation) {
        self.channel = channel
        self.writes = writes
    }

    /// How long `connect` waits for room while the server's listen queue is full.
    public static let busyPatience = QueuedConnect.busyPatience

    /// Connects to the Varlink service listening at `path`. A full listen queue (a Unix socket's
    /// connect fails with EAGAIN then) means a busy server, not a missing one: the client then
    /// waits in the kernel for room, for `busyPatience`, and reports `busy` only after that.
    public static func connect(unixSocketPath path: String, maximumMessageSize: Int = 16 << 20) async throws
        -> VarlinkClient
    {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        let initializer = channelInitializer(maximumMessageSize: maximumMessageSize)
        let asyncChannel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            asyncChannel = try await openChannel(path, bootstrap, initializer)
        } catch let error as IOError {
            throw VarlinkClientError(connecting: path, error)
        } catch {
            throw VarlinkClientError.cannotConnect(path: path, reason: "\(error)")
        }
        let (writeStream, writes) = AsyncStream<ByteBuffer>.makeStream()
        let client = VarlinkClient(channel: asyncChannel.channel, writes: writes)
        Task { await client.pump(asyncChannel, writes: writeStream) }
        return client
    }

    /// The connection's channel. The common case stays one non-blocking connect; only a full
    /// queue pays for the thread that waits in the kernel (`QueuedConnect`), whose failure is
    /// thrown as the same `IOError` and read by the caller alike.
    private static func openChannel(
        _ path: String,
        _ bootstrap: ClientBootstrap,
        _ initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<NIOAsyncChannel<ByteBuffer, ByteBuffer>>
    ) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        do {
            return try await bootstrap.connect(unixDomainSocketPath: path, channelInitializer: initializer)
        } catch let error as IOError where error.errnoCode == EAGAIN {
            let descriptor = try await NIOThreadPool.singleton.runIfActive {
                do throws(ConnectError) {
                    return try QueuedConnect.connectWaiting(unixSocketPath: path, patience: busyPatience)
                } catch {
                    throw IOError(errnoCode: error.code, reason: error.step)
                }
            }
            return try await bootstrap.withConnectedSocket(descriptor, channelInitializer: initializer)
        }
    }

    /// Sets up a new connection's channel: Varlink framing, wrapped for async use.
    private static func channelInitializer(maximumMessageSize: Int)
        -> @Sendable (any Channel) -> EventLoopFuture<NIOAsyncChannel<ByteBuffer, ByteBuffer>>
    {
        { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    ByteToMessageHandler(VarlinkFrameDecoder(maximumMessageSize: maximumMessageSize))
                )
                return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
    }

    /// Calls `method` and returns its single reply; an error reply is thrown as `VarlinkError`.
    public func call(_ method: String, parameters: [String: JSONValue] = [:]) async throws -> VarlinkReplyMessage {
        let frame = try VarlinkCall(method: method, parameters: parameters).frame()
        if let closedError { throw closedError }
        return try await withCheckedThrowingContinuation { continuation in
            pending.append(.single(continuation))
            writes.yield(frame)
        }
    }

    /// Calls `method` with `more` and returns its replies as they arrive; an error reply ends the
    /// stream by throwing `VarlinkError`. Abandoning the stream before its last reply closes the
    /// connection: Varlink cancels a call only by hanging up, and replies to later calls would
    /// otherwise wait behind the abandoned one forever.
    public func stream(
        _ method: String,
        parameters: [String: JSONValue] = [:]
    ) throws -> AsyncThrowingStream<VarlinkReplyMessage, any Error> {
        let frame = try VarlinkCall(method: method, parameters: parameters, more: true).frame()
        let (stream, continuation) = AsyncThrowingStream<VarlinkReplyMessage, any Error>.makeStream()
        continuation.onTermination = { termination in
            if case .cancelled = termination {
                Task { await self.close() }
            }
        }
        if let closedError {
            continuation.finish(throwing: closedError)
        } else {
            pending.append(.stream(continuation))
            writes.yield(frame)
        }
        return stream
    }

    /// Closes the connection; calls still waiting fail with `connectionClosed`.
    public func close() {
        closing = true
        writes.finish()
        channel.close(promise: nil)
    }

    /// Moves frames between the channel and the pending calls until the connection ends.
    private func pump(_ asyncChannel: NIOAsyncChannel<ByteBuffer, ByteBuffer>, writes: AsyncStream<ByteBuffer>) async {
        let channel = asyncChannel.channel
        var failure: any Error = VarlinkClientError.connectionClosed
        do {
            try await asyncChannel.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await frame in writes {
                            try await outbound.write(frame)
                        }
                        channel.close(promise: nil)
                    }
                    for try await frame in inbound {
                        try self.deliver(frame)
                    }
                    group.cancelAll()
                }
            }
        } catch let error as VarlinkFramingError {
            failure = VarlinkClientError.invalidReply("\(error)")
        } catch let error as VarlinkClientError {
            failure = error
        } catch let error as VarlinkError {
            failure = error
        } catch {
            failure = VarlinkClientError.connectionClosed
        }
        failAll(closing ? VarlinkClientError.connectionClosed : failure)
    }

    private func deliver(_ frame: ByteBuffer) throws {
        let reply: VarlinkReplyMessage
        do {
            reply = try VarlinkReplyMessage(frame: frame)
        } catch {
            throw VarlinkClientError.invalidReply("\(error)")
        }
        guard pendingHead < pending.count else {
            // A server may answer before it reads a call, e.g. refusing the connection at accept
            // (TooManyConnections). That error is the answer to every call on this connection.
            if let name = reply.error { throw VarlinkError(name, parameters: reply.parameters) }
            throw VarlinkClientError.invalidReply("a reply arrived for no call")
        }
        let error = reply.error.map { VarlinkError($0, parameters: reply.parameters) }
        switch pending[pendingHead] {
        case .single(let continuation):
            if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: reply) }
            advance()
        case .stream(let continuation):
            if let error {
                continuation.finish(throwing: error)
                advance()
            } else {
                continuation.yield(reply)
                if !reply.continues {
                    continuation.finish()
                    advance()
                }
            }
        }
    }

    private func advance() {
        pendingHead += 1
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
        }
    }

    private func failAll(_ error: any Error) {
        closedError = error
        writes.finish()
        for entry in pending[pendingHead...] {
            switch entry {
            case .single(let continuation): continuation.resume(throwing: error)
            case .stream(let continuation): continuation.finish(throwing: error)
            }
        }
        pending.removeAll()
        pendingHead = 0
    }
}
