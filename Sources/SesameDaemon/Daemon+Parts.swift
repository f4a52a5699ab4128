import Logging
import NIOCore
import NIOPosix
import SesameCore
import SesameProtocol
import SesameStore
import SesameVarlink

/// sesamed's parts put together over an opened store: the engine, the trust and the interfaces,
/// in one place for the daemon and for the tests that assemble it.
extension Daemon {
    /// sesamed's parts over an opened store, as `serve` runs them and the tests call them.
    struct Parts {
        /// The session engine over the store.
        let engine: DaemonEngine
        /// Who may do what.
        let trust: Trust
        /// The interfaces served, each call run with its caller recorded, so that the events it
        /// causes are logged with PEER_UID=.
        let interfaces: [any VarlinkInterface]
    }

    /// Puts the engine, the trust and the interfaces together over `store`, on `clock`;
    /// `statusStale` is told of every event.
    func assemble(
        store: EncryptedStore,
        snapshot: SessionSnapshot,
        providers: Providers,
        clock: any SessionClock,
        statusStale: AsyncStream<Void>.Continuation
    ) -> Parts {
        let engine = makeEngine(
            snapshot: snapshot,
            clock: clock,
            persistence: store,
            providers: providers,
            statusStale: statusStale
        )
        let trust = makeTrust()
        let interfaces = Self.interfaces(engine: engine, store: store, providers: providers, trust: trust)
        return Parts(engine: engine, trust: trust, interfaces: interfaces.map(CallerAttributedInterface.init))
    }

    /// The policy and limits in force, with as many open files allowed as the system lets us have.
    func makeTrust() -> Trust {
        let trust = Trust(
            policy: configuration.accessPolicy,
            limits: configuration.userLimits,
            descriptorLimit: OpenFileLimit.raise()
        )
        logger.info(
            "connections limited",
            metadata: ["total": "\(trust.totalConnections)", "per_user": "\(configuration.userLimits.connections)"]
        )
        return trust
    }

    /// The engine's event loop: a thread of its own, where saving the store may block without
    /// holding up the pool every other task runs on. Made once for the process and kept.
    static let engineLoop: any EventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()

    /// The session engine over the store, refreshing through `providers`; every event it
    /// announces is logged and marks the status line stale.
    func makeEngine(
        snapshot: SessionSnapshot,
        clock: any SessionClock,
        persistence: any SessionPersistence,
        providers: Providers,
        statusStale: AsyncStream<Void>.Continuation
    ) -> DaemonEngine {
        var policy = SessionPolicy(
            expiringMargin: configuration.expiringMargin,
            refreshMargin: configuration.refreshMargin,
            refreshAhead: configuration.refreshAhead
        )
        policy.refreshTokenWarningMargin = configuration.refreshTokenWarning
        return DaemonEngine(
            snapshot: snapshot,
            clock: clock,
            runningOn: Self.engineLoop,
            persistence: persistence,
            refresher: providers,
            policy: policy,
            queueLimit: configuration.subscriberQueueLimit,
            historyLimit: configuration.eventHistoryLimit,
            observer: EventLog.observer(logger: logger, changes: statusStale),
            encode: EventReply.encode
        )
    }

    /// Every interface sesamed serves, over `engine`.
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
            SharesInterface(
                interfaceDescription: descriptions[SharesContract.interface] ?? "",
                engine: engine,
                trust: trust,
                shares: Shares()
            ),
            ErrorsOnlyInterface(
                name: ContractError.varlink,
                interfaceDescription: descriptions[ContractError.varlink] ?? ""
            ),
        ]
    }
}
