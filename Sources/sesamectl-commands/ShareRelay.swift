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
    /// which sesamed limits per user (128 by default), and the user's own commands and other
    /// shares (`Shares.perUser`) need some too.
    static let connectionLimit = 16
    private let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Listens at `socket`'s path, the socket made with `group` and `mode`, relaying to
    /// sesamed at `daemonSocket` for the share `share`.
    static func start(at socket: SharedSocket, mode: UInt16, group: gid_t?, share: String, daemonSocket: String)
        async throws -> ShareRelay
    {
        let budget = ConnectionBudget(limit: connectionLimit)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { consumer in
                guard budget.take() else { return consumer.close() }
                consumer.closeFuture.whenComplete { _ in budget.give() }
                return consumer.eventLoop.makeCompletedFuture {
                    guard let options = consumer.syncOptions else { throw ChannelError.operationUnsupported }
                    // Nothing is read from the consumer until sesamed has said yes.
                    try options.setOption(.autoRead, value: false)
                    try options.setOption(.allowRemoteHalfClosure, value: true)
                    // Started once the connection is active: relaying bytes needs a registered
                    // channel, and sesamed's answer can come before the accept is done.
                    try consumer.pipeline.syncOperations.addHandler(
                        ActiveCallback { relay(consumer, share: share, daemonSocket: daemonSocket) }
                    )
                }
            }
        // Made with no permission for anyone else from the start (umask), then given the group
        // and mode asked for: never, even for a moment, open wider than that. The bind happens
        // on an event loop thread: the mask stays until it is done.
        let previous = umask(0o177)
        defer { umask(previous) }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(unixDomainSocketPath: socket.path).get()
        } catch {
            throw ExitError.message("cannot listen at \(socket.path): \(Self.reason(error))")
        }
        socket.bound()
        let listener = ShareRelay(channel: channel)
        do {
            try socket.setOwnership(mode: mode, group: group)
        } catch {
            listener.close()
            socket.remove()
            throw error
        }
        return listener
    }

    /// Stops listening; the connections open end with the process.
    func close() {
        channel.close(promise: nil)
    }

    /// What failed, in words: the system's for an I/O error.
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
