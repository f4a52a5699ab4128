import FoundationEssentials
import Logging
import ServiceLifecycle
import SesameCore
import SesameProtocol
import SesameStore
import SesameVarlink
import SesameWire
import UnixSignals

/// The engine as the daemon runs it: events are encoded once into Varlink replies.
typealias DaemonEngine = SessionEngine<EventReply.Encoded>

/// sesamed put together: the token store, the session engine, the Varlink server and its interfaces, and the
/// systemd integration, run as one service group that SIGTERM drains.
public struct Daemon: Sendable {
    /// The name systemd's socket unit gives the Varlink socket (`FileDescriptorName=`).
    public static let socketName = "varlink"

    let configuration: DaemonConfiguration
    private let reread: @Sendable () throws -> DaemonConfiguration
    let logger: Logger
    private let notifier = SystemdNotifier()

    /// Creates a daemon that runs with `configuration`. On SIGHUP `reread` builds the
    /// configuration again, exactly as at start (file, then command-line flags).
    public init(
        configuration: DaemonConfiguration,
        reread: @escaping @Sendable () throws -> DaemonConfiguration,
        logger: Logger
    ) {
        self.configuration = configuration
        self.reread = reread
        self.logger = logger
    }

    /// Opens the store, starts serving, tells systemd `READY=1` once the socket accepts connections, and returns
    /// after a graceful shutdown (SIGTERM or SIGINT).
    public func run() async throws {
        forbidCoreDumps()
        checkMallocTuned()
        let (store, snapshot, lock) = try openStore()
        defer { withExtendedLifetime(lock) {} }
        let providers = try loadProviders()
        // Every provider holds an HTTP client that must be shut down, however serving ends.
        do {
            try await serve(store: store, snapshot: snapshot, providers: providers)
        } catch {
            await providers.shutdown()
            throw error
        }
        await providers.shutdown()
        logger.info("stopped")
    }

    /// Builds the engine and the server, and serves (telling systemd `READY=1` once SIGTERM is
    /// handled) until a graceful shutdown ends.
    private func serve(store: EncryptedStore, snapshot: SessionSnapshot, providers: Providers) async throws {
        let (statusChanges, statusStale) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let parts = assemble(
            store: store,
            snapshot: snapshot,
            providers: providers,
            clock: SystemSessionClock(),
            statusStale: statusStale
        )
        let (engine, trust) = (parts.engine, parts.trust)
        let (server, endpoint) = try await bindServer(interfaces: parts.interfaces, trust: trust)
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        logger.info("listening", metadata: ["endpoint": "\(endpoint)"])

        let services = makeServices(
            engine: engine,
            server: server,
            readyStatus: await StatusService.status(of: engine),
            trust: trust,
            providers: providers,
            hangups: hangups,
            statusChanges: statusChanges
        )
        var groupConfiguration = ServiceGroupConfiguration(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // After shutdown_timeout the group cancels every service; the server then closes what is still open.
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        do {
            try await ServiceGroup(configuration: groupConfiguration).run()
        } catch is CancellationError {
            // A graceful shutdown cancels what is still running; that is the normal way out.
        }
    }

    /// The services the daemon runs, in the order a group starts them. A group stops them last to
    /// first: the server first, so STOPPING=1 goes out at once and connections drain while the rest
    /// still runs. Each is named for the group's log lines; unnamed, the group would name it by
    /// printing the whole value through reflection, a search of the binary's conformances that
    /// cost a seventh of sesamed's start. `readyStatus` is the status line sent with READY=1.
    private func makeServices(
        engine: DaemonEngine,
        server: VarlinkServer,
        readyStatus: String,
        trust: Trust,
        providers: Providers,
        hangups: UnixSignalsSequence,
        statusChanges: AsyncStream<Void>
    ) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        [
            .init(
                service: WatchdogService(notifier: notifier, engine: engine, logger: logger),
                serviceName: "watchdog"
            ),
            .init(service: DeadlineService(engine: engine, logger: logger), serviceName: "deadlines"),
            .init(service: MemoryReturnService(), serviceName: "memory"),
            .init(
                service: StatusService(engine: engine, changes: statusChanges, notifier: notifier),
                serviceName: "status"
            ),
            .init(
                service: reloadService(hangups: hangups, engine: engine, trust: trust, providers: providers),
                serviceName: "reload"
            ),
            .init(
                service: VarlinkService(
                    server: server,
                    notifier: notifier,
                    shutdownTimeout: configuration.shutdownTimeout,
                    readyStatus: readyStatus,
                    logger: logger
                ),
                serviceName: "varlink"
            ),
        ]
    }

    /// The Varlink server on the socket systemd passed, or else on the configured path.
    private func bindServer(interfaces: [any VarlinkInterface], trust: Trust) async throws
        -> (VarlinkServer, VarlinkEndpoint)
    {
        let endpoint: VarlinkEndpoint =
            if let socket = try SocketActivation.socket(named: Self.socketName) {
                .inheritedSocket(descriptor: socket.descriptor)
            } else {
                .path(configuration.socketPath, mode: configuration.socketMode)
            }
        let info = VarlinkServiceInfo(vendor: "Sesame", product: "sesamed", version: SesameVersion.current, url: "")
        let server = try await VarlinkServer.bind(
            endpoint,
            configuration: .init(
                maximumMessageSize: configuration.maximumMessageSize,
                info: info,
                protocolInterface: ContractError.varlink,
                connectionGate: trust,
                unfinishedMessageTimeout: .seconds(configuration.unfinishedMessageTimeout.components.seconds)
            ),
            interfaces: interfaces,
            logger: logger
        )
        return (server, endpoint)
    }

    /// Rereads the configuration on SIGHUP and applies it to the running daemon.
    private func reloadService(
        hangups: UnixSignalsSequence,
        engine: DaemonEngine,
        trust: Trust,
        providers: Providers
    ) -> ReloadService {
        let (reread, running, logger) = (self.reread, configuration, logger)
        return ReloadService(
            hangups: hangups,
            notifier: notifier,
            reload: {
                try await Reload.apply(
                    try reread(),
                    running: running,
                    trust: trust,
                    providers: providers,
                    engine: engine,
                    logger: logger
                )
                return await StatusService.status(of: engine)
            },
            logger: logger
        )
    }
}
