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
/// each connection served by a handler on its event loop (`VarlinkConnectionHandler`), its calls
/// in the order they arrived.
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
        /// How long a connection may hold part of a message without completing one; then it
        /// is closed.
        public var unfinishedMessageTimeout: TimeAmount
        /// How many bytes of unfinished messages one uid's connections may hold together:
        /// eight of the largest messages. A connection that would take it over is closed.
        public var unfinishedBytesPerUser: Int { 8 * maximumMessageSize }

        /// Creates a configuration.
        public init(
            maximumMessageSize: Int = 1 << 20,
            info: VarlinkServiceInfo,
            protocolInterface: String,
            connectionGate: (any VarlinkConnectionGate)? = nil,
            unfinishedMessageTimeout: TimeAmount = .seconds(30)
        ) {
            self.maximumMessageSize = maximumMessageSize
            self.info = info
            self.protocolInterface = protocolInterface
            self.connectionGate = connectionGate
            self.unfinishedMessageTimeout = unfinishedMessageTimeout
        }
    }

    private let acceptor: ConnectionAcceptor
    private let connections: OpenConnections
    private let tasks: OffLoopTasks
    private let stopReport: StopReport
    private let logger: Logger
    private let boundSocket: (path: String, identity: FileIdentity)?

    /// The endpoint this server was bound to.
    public let endpoint: VarlinkEndpoint

    private init(
        acceptor: ConnectionAcceptor,
        shared: VarlinkConnectionHandler.Shared,
        endpoint: VarlinkEndpoint,
        boundSocket: (path: String, identity: FileIdentity)?,
        logger: Logger
    ) {
        self.acceptor = acceptor
        self.connections = shared.connections
        self.tasks = shared.tasks
        self.stopReport = shared.stopReport
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
        let service = VarlinkServiceInterface(info: configuration.info, interfaces: interfaces)
        var table: [String: any VarlinkInterface] = [service.name: service]
        for interface in interfaces {
            precondition(table[interface.name] == nil, "interface \(interface.name) registered twice")
            table[interface.name] = interface
        }
        let connections = OpenConnections()
        let setUp = ConnectionSetUp(
            answerer: CallAnswerer(
                interfaces: table,
                protocolInterface: configuration.protocolInterface,
                logger: logger
            ),
            connections: connections,
            gate: configuration.connectionGate,
            maximumMessageSize: configuration.maximumMessageSize,
            unfinished: UnfinishedMessages(
                timeout: configuration.unfinishedMessageTimeout,
                bytesPerUser: configuration.unfinishedBytesPerUser
            )
        )
        let listening: Int32
        var boundSocket: (path: String, identity: FileIdentity)?
        switch endpoint {
        case .path(let path, let mode):
            try UnixSocketPath.prepare(path)
            listening = try ListeningSocket.bind(path: path, mode: mode)
            boundSocket = UnixSocketPath.identity(of: path).map { (path, $0) }
        case .inheritedSocket(let descriptor):
            try ListeningSocket.adopt(descriptor)
            listening = descriptor
        }
        // Accepting fails for good only if the socket stops listening: every connection is
        // then ended, so `run()` returns rather than serving on with no new caller.
        let acceptor: ConnectionAcceptor
        do {
            acceptor = try ConnectionAcceptor(listening: listening, setUp: setUp, logger: logger) {
                connections.closeAll()
            }
        } catch {
            // Nothing will serve the socket (which the acceptor has closed): its file goes too.
            if let boundSocket { UnixSocketPath.remove(boundSocket.path, ifStill: boundSocket.identity) }
            throw error
        }
        return VarlinkServer(
            acceptor: acceptor,
            shared: setUp.shared,
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
        // Every connection has ended by then: what a stop found and cut off is known in full.
        defer { logStopped() }
        await withTaskCancellationHandler {
            acceptor.start()
            await connections.allEnded()
            // A connection starts no task once its channel has closed, so none starts now.
            await tasks.allEnded()
        } onCancel: {
            self.cutOff()
        }
        await acceptor.waitUntilStopped()
    }

    /// Stops gracefully: no new connection is accepted and no new call started; idle connections,
    /// including any with half a call in them, are closed and streaming calls are cancelled at
    /// once; calls being answered may finish, then their connections close and `run()` returns.
    /// Each connection hears of the stop on its own event loop, so a call that had fully
    /// arrived just before may still start there, and is then let finish like the others.
    /// Cancelling `run()` bounds the wait: whatever is still open then is closed.
    public func shutdown() {
        acceptor.stop()
        // Said before the connections hear of it: they may have closed, and `run()` logged
        // what the stop did, before `drain` returns.
        logger.info("stopping: no new connections or calls", metadata: ["connections": "\(connections.count)"])
        connections.drain()
    }

    /// Ends every open connection at once.
    private func cutOff() {
        acceptor.stop()
        connections.closeAll()
    }

    /// Says what a graceful stop found the connections doing, and which connections a hard
    /// stop cut off.
    private func logStopped() {
        let drained = stopReport.drainedSoFar
        if drained != StopReport.Drained() {
            logger.info(
                "stopped",
                metadata: [
                    "idle_closed": "\(drained.idle)",
                    "streaming_cancelled": "\(drained.streaming)",
                    "calls_left_to_finish": "\(drained.answering)",
                ]
            )
        }
        let open = stopReport.takeCutOff()
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
}
