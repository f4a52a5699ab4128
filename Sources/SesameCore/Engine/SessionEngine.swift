import FoundationEssentials
import NIOCore

/// The single source of truth for every account: all changes go through this actor, each is
/// persisted first and announced second, with a sequence number that keeps growing.
///
/// The actor runs on an event loop of its own, not on the pool every task shares: saving a
/// change seals and syncs the store, which blocks, and the engine must not answer anything
/// before that is done. Its events are handed to subscribers on that loop too, each after the
/// change that made it, so callers of a busy engine wait behind its deliveries.
///
/// `Payload` is what the event registry hands subscribers: the daemon encodes each event once
/// into wire bytes; tests use the events themselves.
public actor SessionEngine<Payload: Sendable> {
    /// What "now" is for this engine's accounts; callers that compute expiry times use it too.
    public nonisolated let clock: any SessionClock
    /// The loop the actor runs on (`unownedExecutor`), kept here: the executor is unowned.
    private nonisolated let executor: any SerialExecutor
    let persistence: any SessionPersistence
    let refresher: any TokenRefresher
    let policy: SessionPolicy
    /// Subscribers of this engine's events.
    public nonisolated let registry: EventRegistry<Payload>
    /// Sees every event right after it is published, for logs and status lines.
    let observer: (@Sendable (AuthEvent) -> Void)?

    var accounts: [String: StoredAccount] {
        didSet { view.publish(accounts) }
    }
    /// The accounts for readers that must not wait while the engine saves (see `SessionReadView`).
    public nonisolated let view: SessionReadView
    var lastSequence: UInt64
    /// How refreshing stands per account; an account without an entry has nothing under way
    /// and nothing to remember (see `updateRefreshState`).
    var refreshStates: [String: RefreshState] = [:]
    /// How revoking each account's replaced grants is being retried (`revokeReplacedGrants`).
    var revocationRetries: [String: RevocationRetry] = [:]
    /// Tokens narrowed to other scopes or audiences, by account and narrowing.
    var narrowed = NarrowedTokens()
    var nextRefreshGeneration: UInt64 = 0
    /// Announcements of changes the engine holds but the store does not yet: set only when a
    /// provider's answer could not be saved but must not be dropped (a rotated refresh token is
    /// the only copy). The next successful save carries them.
    var unsavedAnnouncements: [Announcement]?
    /// Accounts changed here but not saved (a refresh whose save failed keeps the provider's
    /// tokens): the next save hands them to the store with its own changes.
    var unsavedAccounts: Set<String> = []
    /// Wakes the deadline loop when a change may have added an earlier deadline.
    let changes: AsyncStream<Void>.Continuation
    var changeStream: AsyncStream<Void>?

    /// Creates an engine that starts from `snapshot` and runs on `loop`, which should be a loop
    /// of its own: whatever else runs there waits behind every save.
    public init(
        snapshot: SessionSnapshot,
        clock: any SessionClock,
        runningOn loop: any EventLoop,
        persistence: any SessionPersistence,
        refresher: any TokenRefresher = NoTokenRefresher(),
        policy: SessionPolicy = SessionPolicy(),
        queueLimit: Int = 1024,
        historyLimit: Int = 4096,
        observer: (@Sendable (AuthEvent) -> Void)? = nil,
        encode: @escaping @Sendable (AuthEvent) -> Payload
    ) {
        self.observer = observer
        self.clock = clock
        self.executor = loop.executor
        self.persistence = persistence
        self.refresher = refresher
        self.policy = policy
        self.registry = EventRegistry(
            queueLimit: queueLimit,
            historyLimit: historyLimit,
            lastSequenceBeforeStart: snapshot.lastSequence,
            kept: AccountHistory.replayable(in: snapshot.accounts, through: snapshot.lastSequence),
            deliveringOn: loop,
            encode: encode
        )
        var accounts: [String: StoredAccount] = [:]
        for var stored in snapshot.accounts {
            // A refresh cannot survive a restart; the account is where it was before it began.
            if stored.account.state == .refreshing {
                let expired = stored.tokens?.accessTokenHasExpired(at: clock.now) ?? true
                stored.account.state = expired ? .expired : .active
            }
            stored.account.nextRefreshAt = stored.refreshAt
            accounts[stored.account.id] = stored
        }
        self.accounts = accounts
        self.view = SessionReadView(accounts)
        self.lastSequence = snapshot.lastSequence
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.changes = continuation
        self.changeStream = stream
    }

    /// The engine's own event loop, where its saves may block.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Every account, ordered by id.
    public func list() -> [Account] {
        view.list()
    }

    /// The account with this id.
    public func account(_ id: String) throws(SessionError) -> Account {
        try view.account(id)
    }

    /// The sequence number of the last event announced.
    public var currentSequence: UInt64 { lastSequence }

    /// Subscribes to events. The reply order a subscriber should see is: `ready` at `current`,
    /// then the backlog (replayed events, or a resync with `accounts`), then the subscription.
    public func subscribe(filter: EventFilter, since: UInt64?) -> (
        subscription: Subscription<Payload>,
        backlog: EventRegistry<Payload>.Backlog,
        current: UInt64,
        accounts: [Account]
    ) {
        let (subscription, backlog) = registry.subscribe(filter: filter, since: since, current: lastSequence)
        let visible: [Account]
        if case .resync = backlog {
            visible = list().filter(filter.matches)
        } else {
            visible = []
        }
        return (subscription, backlog, lastSequence, visible)
    }

    /// A refresh under way. The generation tells a refresh that still owns its account's slot
    /// from one that was overtaken by a logout, removal or new login while it ran.
    struct InFlightRefresh {
        var generation: UInt64
        var task: Task<TokenSet, any Error>
    }

    /// Everything the engine remembers about refreshing one account, kept together so that
    /// forgetting an account's refreshes forgets all of it at once.
    struct RefreshState {
        /// The refresh in flight, which every concurrent caller joins.
        var inFlight: InFlightRefresh?
        /// Transient refresh failures in a row, for the backoff; forgotten on success.
        var failures = 0
        /// When the last refresh started, to bound refreshes that clients ask for.
        var lastAttempt: Date?
        /// Until when callers do not start a refresh after the last one failed.
        var retryNotBefore: Date?
        /// Until when the provider itself asked not to be called again (its Retry-After, or its
        /// own pacing rules): not even a caller whose token has expired refreshes before then.
        var providerHoldUntil: Date?
        /// Why, when sesamed holds the refresh by the provider's rules (`RefreshHold`).
        var holdReason: String?
        /// Logouts under way: no refresh starts while the grant is being revoked, so that what
        /// is revoked is what the account holds.
        var logouts = 0
        /// The access token whose reported refusal last started a refresh: a refusal is acted
        /// on once per token, however often it is reported.
        var refreshedForRejection: String?

        /// Whether a refresh runs or a logout is under way: no planned refresh starts then.
        var isBusy: Bool { inFlight != nil || logouts > 0 }

        /// Whether there is nothing to remember.
        var isEmpty: Bool {
            inFlight == nil && failures == 0 && lastAttempt == nil && retryNotBefore == nil && providerHoldUntil == nil
                && logouts == 0 && refreshedForRejection == nil
        }
    }

    /// The account's refresh state as it stands.
    func refreshState(of id: String) -> RefreshState {
        refreshStates[id] ?? RefreshState()
    }

    /// Changes the account's refresh state; an empty one is dropped, so that the table holds
    /// only accounts with something under way or remembered.
    @discardableResult
    func updateRefreshState<Result>(of id: String, _ change: (inout RefreshState) -> Result) -> Result {
        var state = refreshState(of: id)
        defer { refreshStates[id] = state.isEmpty ? nil : state }
        return change(&state)
    }

    /// Forgets any refresh of `id` in flight: what it brings back no longer applies. A logout
    /// under way is still counted.
    func abandonRefresh(of id: String) {
        updateRefreshState(of: id) { state in
            state.inFlight?.task.cancel()
            state = RefreshState(logouts: state.logouts)
        }
    }

    /// Forgets the backoff and holds of every account of `provider`, whose settings just changed
    /// (a reload): a configuration error that held them is fixed, and whatever the old settings
    /// met says nothing of the new ones. A caller whose token is due refreshes at once.
    public func forgetHolds(ofProvider provider: String) {
        for (id, stored) in accounts where stored.account.provider == provider {
            updateRefreshState(of: id) { state in
                state.retryNotBefore = nil
                state.providerHoldUntil = nil
            }
        }
    }

    /// Forgets the failed refreshes of `id`: its refreshes work again, or its session is over.
    func forgetFailures(_ id: String) {
        updateRefreshState(of: id) { state in
            state.failures = 0
            state.retryNotBefore = nil
            state.providerHoldUntil = nil
            state.holdReason = nil
        }
    }

    /// One event the commit announces once the change is saved.
    struct Announcement {
        var kind: AuthEvent.Kind
        var account: String
        var reason: AuthEvent.LogoutReason? = nil
        var retryAt: Date? = nil
        var revokedRemotely: Bool? = nil
        var detail: String? = nil
        /// The account as the event should show it, when it is announced later than the change
        /// (a refresh whose save failed at first); otherwise the account as committed.
        var snapshot: Account? = nil
    }

    /// Moves `stored` to `state`, or refuses if the state machine does not allow it.
    func transition(_ stored: inout StoredAccount, to state: SessionState) throws(SessionError) {
        guard stored.account.state.allows(state) else {
            throw .illegalTransition(
                IllegalTransitionError(account: stored.account.id, from: stored.account.state, to: state)
            )
        }
        stored.account.state = state
        stored.account.updatedAt = clock.now
    }
}
