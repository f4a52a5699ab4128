import CPeerCredentials
import FoundationEssentials
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// The listening side of a share: each connection to the share's socket gets a connection of
/// its own to sesamed, which `Join` makes the share's (so sesamed, not this process, decides
/// what it may do), and from then on the bytes pass through unread both ways.
final class ShareRelay: Sendable {
    /// Connections relayed at once: each is also one of the user's connections to sesamed,
    /// which sesamed limits per user, and the user's own commands need some too.
    static let connectionLimit = 32
    private let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Listens at `path` (which `SharedSocket.prepare` cleared), the socket made with `mode`
    /// and `group`, relaying to sesamed at `daemonSocket` for the share `share`.
    static func start(at path: String, mode: UInt16, group: gid_t?, share: String, daemonSocket: String)
        async throws -> ShareRelay
    {
        let budget = ConnectionBudget(limit: connectionLimit)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { consumer in
                guard budget.take() else { return consumer.close() }
                consumer.closeFuture.whenComplete { _ in budget.give() }
                return consumer.eventLoop.makeCompletedFuture {
                    // Nothing is read from the consumer until sesamed has said yes.
                    try consumer.syncOptions?.setOption(.autoRead, value: false)
                    try consumer.syncOptions?.setOption(.allowRemoteHalfClosure, value: true)
                    // Started once the connection is active: relaying bytes needs a registered
                    // channel, and sesamed's answer can come before the accept is done.
                    try consumer.pipeline.syncOperations.addHandler(
                        ActiveCallback { relay(consumer, share: share, daemonSocket: daemonSocket) }
                    )
                }
            }
        // Made with no permission for anyone else from the start (umask), then given the mode
        // asked for: never, even for a moment, open wider than that.
        // The bind happens on an event loop thread: the mask stays until it is done.
        let previous = umask(0o177)
        defer { umask(previous) }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(unixDomainSocketPath: path).get()
        } catch {
            throw ExitFailure.message("cannot listen at \(path): \(Self.reason(error))")
        }
        let listener = ShareRelay(channel: channel)
        guard chmod(path, mode_t(mode)) == 0, group.map({ chown(path, uid_t.max, $0) == 0 }) ?? true else {
            let reason = String(cString: strerror(errno))
            listener.close()
            SharedSocket.remove(path)
            throw ExitFailure.message("cannot set the mode or group of \(path): \(reason)")
        }
        return listener
    }

    /// Stops listening; the connections open end with the process.
    func close() {
        channel.close(promise: nil)
    }

    private static func reason(_ error: any Error) -> String {
        (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
    }

    /// Connects `consumer` to sesamed once sesamed accepted the connection as the share's; any
    /// failure closes the consumer's connection.
    private static func relay(_ consumer: any Channel, share: String, daemonSocket: String) {
        guard let socket = consumer as? SocketOptionProvider else { return consumer.close(promise: nil) }
        let credentials: EventLoopFuture<sesame_ucred> = socket.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        let loop = consumer.eventLoop
        let accepted = loop.makePromise(of: Void.self)
        let joined = credentials.flatMap { credentials in
            let join = JoinHandler.frame(share: share, consumer: credentials)
            return ClientBootstrap(group: loop)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .channelInitializer { upstream in
                    upstream.eventLoop.makeCompletedFuture {
                        try upstream.pipeline.syncOperations.addHandler(JoinHandler(frame: join, accepted: accepted))
                    }
                }
                .connect(unixDomainSocketPath: daemonSocket)
        }.flatMap { (upstream: any Channel) -> EventLoopFuture<any Channel> in
            accepted.futureResult.map { () -> any Channel in upstream }.flatMapErrorThrowing {
                (error: any Error) -> any Channel in
                upstream.close(promise: nil)
                throw error
            }
        }
        joined.whenComplete { result in
            switch result {
            case .success(let upstream): glue(consumer, upstream)
            case .failure:
                accepted.fail(ChannelError.ioOnClosedChannel)
                consumer.close(promise: nil)
            }
        }
    }

    /// Passes bytes both ways from now on, and starts reading the consumer. Runs on the loop
    /// both channels share.
    private static func glue(_ consumer: any Channel, _ upstream: any Channel) {
        let (ours, theirs) = GlueHandler.matchedPair()
        do {
            try consumer.pipeline.syncOperations.addHandler(ours)
            try upstream.pipeline.syncOperations.addHandler(theirs)
            try consumer.syncOptions?.setOption(.autoRead, value: true)
            consumer.read()
        } catch {
            consumer.close(promise: nil)
            upstream.close(promise: nil)
        }
    }
}
