import Foundation
import Logging
import ServiceLifecycle
import SesameCore
import SesameProtocol
import SesameStore
import SesameVarlink
import UnixSignals

/// Why the daemon could not start.
public enum DaemonStartError: Error, Sendable, CustomStringConvertible {
    /// The state directory could not be created.
    case stateDirectory(path: String, reason: String)

    public var description: String {
        switch self {
        case .stateDirectory(let path, let reason): "cannot create state directory \(path): \(reason)"
        }
    }
}

/// The engine as the daemon runs it: events are encoded once into Varlink replies.
typealias DaemonEngine = SessionEngine<EventReply.Encoded>

/// sesamed put together: the token store, the session engine, the Varlink server and its interfaces, and the
/// systemd integration, run as one service group that SIGTERM drains.
public struct Daemon: Sendable {
    /// The name systemd's socket unit gives the Varlink socket (`FileDescriptorName=`).
    public static let socketName = "varlink"

    private let configuration: DaemonConfiguration
    private let reread: @Sendable () throws -> DaemonConfiguration
    private let logger: Logger
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
        try Self.makeStateDirectory(configuration.stateDirectory)
        let (store, snapshot) = try EncryptedStore.open(
            directory: configuration.stateDirectory,
            keySources: KeySources(
                credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"],
                keyFile: configuration.storeKeyFile,
                generatedKeyFile: configuration.allowGeneratedKey ? configuration.stateDirectory + "/dev.key" : nil
            ),
            onDamage: configuration.onDamagedStore,
            logger: logger
        )
        let providers = Providers(
            try ProviderFiles.load(
                directory: configuration.providersDirectory,
                credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"]
            ),
            logger: logger
        )
        logger.info("providers configured", metadata: ["providers": "\(providers.names.joined(separator: ","))"])
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

    /// Builds the engine and the server, tells systemd `READY=1`, and serves until a graceful
    /// shutdown ends.
    private func serve(store: EncryptedStore, snapshot: SessionSnapshot, providers: Providers) async throws {
        let (statusChanges, statusStale) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let engine = DaemonEngine(
            snapshot: snapshot,
            clock: SystemSessionClock(),
            persistence: store,
            refresher: providers,
            policy: SessionPolicy(
                expiringMargin: configuration.expiringMargin,
                refreshMargin: configuration.refreshMargin,
                refreshAhead: configuration.refreshAhead
            ),
            queueLimit: configuration.subscriberQueueLimit,
            historyLimit: configuration.eventHistoryLimit,
            observer: EventLog.observer(logger: logger, changes: statusStale),
            encode: EventReply.encode
        )
        let trust = Trust(policy: configuration.accessPolicy, limits: configuration.userLimits)
        let endpoint: VarlinkEndpoint =
            if let socket = try SocketActivation.socket(named: Self.socketName) {
                .inheritedSocket(descriptor: socket.descriptor)
            } else {
                .path(configuration.socketPath, mode: configuration.socketMode)
            }
        let server = try await VarlinkServer.bind(
            endpoint,
            configuration: .init(
                maximumMessageSize: configuration.maximumMessageSize,
                info: VarlinkServiceInfo(
                    vendor: "Sesame",
                    product: "sesamed",
                    version: SesameVersion.current,
                    url: ""
                ),
                protocolInterface: ContractError.varlink,
                connectionGate: trust
            ),
            interfaces: Self.interfaces(engine: engine, store: store, providers: providers, trust: trust),
            logger: logger
        )
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        logger.info("listening", metadata: ["endpoint": "\(endpoint)"])
        let status = await StatusService.status(of: engine)
        notifier.notify(.ready, .status(status))

        let reread = self.reread
        let running = configuration
        let logger = logger
        // A group stops its services last to first: the server first, so STOPPING=1 goes out at
        // once and connections drain while the rest still runs.
        let services: [any Service] = [
            WatchdogService(notifier: notifier, engine: engine, logger: logger),
            DeadlineService(engine: engine),
            StatusService(engine: engine, changes: statusChanges, notifier: notifier),
            ReloadService(
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
            ),
            VarlinkService(
                server: server,
                notifier: notifier,
                shutdownTimeout: configuration.shutdownTimeout,
                logger: logger
            ),
        ]
        var groupConfiguration = ServiceGroupConfiguration(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // After shutdown_timeout the group cancels every service; the server then closes what is still open.
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch is CancellationError {
            // A graceful shutdown cancels what is still running; that is the normal way out.
        }
    }

    static func interfaces(
        engine: DaemonEngine,
        store: EncryptedStore,
        providers: Providers,
        trust: Trust
    ) -> [any VarlinkInterface] {
        let descriptions = InterfaceDescriptions.byName
        return [
            AccountsInterface(
                interfaceDescription: descriptions[AccountsContract.interface] ?? "",
                engine: engine,
                providers: providers,
                trust: trust
            ),
            EventsInterface(
                interfaceDescription: descriptions[EventsContract.interface] ?? "",
                engine: engine,
                trust: trust
            ),
            AdminInterface(
                interfaceDescription: descriptions[AdminContract.interface] ?? "",
                engine: engine,
                store: store
            ),
            ErrorsOnlyInterface(
                name: ContractError.varlink,
                interfaceDescription: descriptions[ContractError.varlink] ?? ""
            ),
        ]
    }

    private static func makeStateDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw DaemonStartError.stateDirectory(path: path, reason: (error as NSError).localizedDescription)
        }
    }
}

/// An interface that only declares errors, served so clients can read what the errors mean.
struct ErrorsOnlyInterface: VarlinkInterface {
    let name: String
    let interfaceDescription: String

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        throw VarlinkError.methodNotFound(call.method)
    }
}
