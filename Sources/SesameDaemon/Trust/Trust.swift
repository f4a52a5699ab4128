import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameVarlink
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How much one uid may hold at once, so that no user can starve the others.
public struct UserLimits: Sendable, Hashable {
    /// Open connections per uid.
    public var connections: Int
    /// Live event subscriptions per uid.
    public var subscriptions: Int
    /// Logins started and not yet finished per uid.
    public var logins: Int
    /// Accounts one uid may own (logged-out ones count until removed).
    public var accounts: Int
    /// Open connections of all uids together (each costs a descriptor and some memory), never
    /// more than the descriptor limit leaves room for.
    public var totalConnections: Int
    /// Calls that reach a provider one uid may make in a minute (`ProviderCallBudget`).
    public var providerCallsPerMinute: Int

    /// Creates limits.
    public init(
        connections: Int = 128,
        subscriptions: Int = 64,
        logins: Int = 8,
        accounts: Int = 32,
        totalConnections: Int = 4096,
        providerCallsPerMinute: Int = 30
    ) {
        self.connections = connections
        self.subscriptions = subscriptions
        self.logins = logins
        self.accounts = accounts
        self.totalConnections = totalConnections
        self.providerCallsPerMinute = providerCallsPerMinute
    }

    /// Descriptors kept free below the process's limit: for the store, providers' HTTP
    /// connections, the journal, and root's connections beyond the total.
    public static let descriptorHeadroom = 256
    /// Connections root may open beyond the total, so that an administrator is still served
    /// while other users hold every connection.
    public static let rootReserve = 32

    /// The total in force for a process allowed `descriptorLimit` open files: the configured
    /// one, never closer to the limit than the headroom, so accepting never runs out of
    /// descriptors (an accept loop at EMFILE spins).
    public func totalConnections(descriptorLimit: Int) -> Int {
        min(totalConnections, max(1, descriptorLimit - Self.descriptorHeadroom))
    }
}

/// A per-uid resource with a limit.
enum LimitedResource: Sendable, Hashable {
    case connection, subscription, login

    func limit(in limits: UserLimits) -> Int {
        switch self {
        case .connection: limits.connections
        case .subscription: limits.subscriptions
        case .login: limits.logins
        }
    }

    /// The named error a caller over the limit gets.
    func error(limit: Int) -> VarlinkError {
        switch self {
        case .connection: VarlinkError(.tooManyConnections(limit: limit))
        case .subscription: VarlinkError(.tooManySubscriptions(limit: limit))
        case .login: VarlinkError(.tooManyLogins(limit: limit))
        }
    }
}

/// The access policy and the per-uid limits in force, and what each uid holds now. A config
/// reload (SIGHUP) replaces policy and limits at once; every later check, including the event
/// filters of live subscriptions, sees the new ones.
final class Trust: Sendable, VarlinkConnectionGate {
    private struct State {
        var policy: AccessPolicy
        var limits: UserLimits
        var held: [LimitedResource: [UInt32: Int]] = [:]
        var providerCalls = ProviderCallBudget()
        /// Grows by one at every reload.
        var generation: UInt64 = 0
    }

    private let state: Mutex<State>
    /// A uid's supplementary groups: the user database, or a test's own.
    private let lookUpGroups: @Sendable (UInt32) -> Set<UInt32>
    /// The process's open-file limit, which bounds the connections of all users together.
    private let descriptorLimit: Int

    init(
        policy: AccessPolicy,
        limits: UserLimits,
        descriptorLimit: Int = .max,
        groups: @escaping @Sendable (UInt32) -> Set<UInt32> = UserDatabase.groups(ofUID:)
    ) {
        state = Mutex(State(policy: policy, limits: limits))
        self.descriptorLimit = descriptorLimit
        lookUpGroups = groups
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit and returns it: sesamed waits with epoll,
    /// not select, so many descriptors cost it nothing (systemd's advice for such services).
    /// Done once at start-up, by the daemon.
    static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// The connections of all users together that are admitted.
    var totalConnections: Int { state.withLock { $0.limits.totalConnections(descriptorLimit: descriptorLimit) } }

    /// How many reloads have been applied: a caller that keeps an identity for long (a live
    /// subscription) looks it up anew when this changes.
    var generation: UInt64 { state.withLock { $0.generation } }

    var policy: AccessPolicy { state.withLock { $0.policy } }

    /// The per-user limits in force.
    var limits: UserLimits { state.withLock { $0.limits } }

    /// Puts a reloaded policy and limits in force. What a uid holds beyond a lowered limit stays
    /// until it is released; only new requests are refused.
    func update(policy: AccessPolicy, limits: UserLimits) {
        forgetGroups()
        state.withLock {
            $0.policy = policy
            $0.limits = limits
            $0.generation += 1
        }
    }

    /// Takes one `resource` for `uid`, or returns the error to answer when it holds its limit,
    /// counting `besides` more that it holds elsewhere.
    func acquire(_ resource: LimitedResource, for uid: UInt32, besides: Int = 0) -> VarlinkError? {
        state.withLock { Self.take(resource, for: uid, besides: besides, in: &$0) }
    }

    /// Takes one `resource` for `uid` in `state`, unless it holds its limit.
    private static func take(_ resource: LimitedResource, for uid: UInt32, besides: Int = 0, in state: inout State)
        -> VarlinkError?
    {
        let limit = resource.limit(in: state.limits)
        let held = state.held[resource, default: [:]][uid, default: 0]
        guard held + besides < limit else { return resource.error(limit: limit) }
        state.held[resource, default: [:]][uid] = held + 1
        return nil
    }

    /// Spends one call that reaches a provider from `uid`'s allowance at `now`, or returns the
    /// error to answer. Root is not limited: an administrator's scripts stay served.
    func spendProviderCall(for uid: UInt32, at now: Date) -> VarlinkError? {
        guard uid != 0 else { return nil }
        return state.withLock { state in
            let limit = state.limits.providerCallsPerMinute
            return state.providerCalls.spend(for: uid, perMinute: limit, at: now).map {
                VarlinkError(.tooManyProviderCalls(limit: limit, retryAfter: $0))
            }
        }
    }

    /// Gives back one `resource` taken by `acquire`.
    func release(_ resource: LimitedResource, for uid: UInt32) {
        state.withLock { state in
            let held = state.held[resource, default: [:]][uid, default: 0]
            state.held[resource, default: [:]][uid] = held > 1 ? held - 1 : nil
        }
    }

    /// Admits a connection within its uid's limit and the total; root has a reserve beyond
    /// the total, so an administrator is still served when other users hold every connection.
    func admit(_ peer: PeerCredentials) -> VarlinkError? {
        let descriptorLimit = self.descriptorLimit
        return state.withLock { state in
            let total = state.limits.totalConnections(descriptorLimit: descriptorLimit)
            let open = state.held[.connection, default: [:]].values.reduce(0, +)
            guard open < total + (peer.uid == 0 ? UserLimits.rootReserve : 0) else {
                return VarlinkError(.tooManyConnections(limit: total))
            }
            return Self.take(.connection, for: peer.uid, in: &state)
        }
    }

    func release(_ peer: PeerCredentials) {
        release(.connection, for: peer.uid)
    }

    /// The identity of `peer` as the policy needs it: its primary group from the socket, and
    /// its supplementary groups from the user database (as polkit does; `SO_PEERCRED` does not
    /// carry them), looked up only when some rule names a group.
    /// `always` looks the groups up even when no rule names a group now, for a subscription
    /// that must follow rules a reload may add later.
    /// `policy` is the one the identity will be judged by, when the caller has it already.
    func identity(of peer: PeerCredentials, always: Bool = false, under policy: AccessPolicy? = nil) -> CallerIdentity {
        let policy = policy ?? self.policy
        let needsGroups =
            always || policy.adminGroup != nil
            || policy.grants.contains {
                if case .group = $0.principal { true } else { false }
            }
        guard needsGroups else { return CallerIdentity(uid: peer.uid, groups: [peer.gid]) }
        return CallerIdentity(uid: peer.uid, groups: userGroups(of: peer.uid).union([peer.gid]))
    }

    /// The uid's groups from the user database, remembered for a while: a lookup may go to
    /// LDAP or sssd and block, and a busy client makes many calls. They are the same for every
    /// process of the uid; the primary group of each process is added by the caller.
    /// A lookup that began before a reload may end after it: what it found is kept for its own
    /// generation only, so the lookups after the reload do not take the memberships from before.
    private func userGroups(of uid: UInt32) -> Set<UInt32> {
        let now = ContinuousClock.now
        let generation = self.generation
        if let cached = groupCache.withLock({ $0[uid] }), cached.expires > now, cached.generation == generation {
            return cached.groups
        }
        let groups = lookUpGroups(uid)
        groupCache.withLock { cache in
            if cache.count > 4096 { cache.removeAll() }
            cache[uid] = CachedGroups(groups: groups, expires: now + Self.groupCacheLifetime, generation: generation)
        }
        return groups
    }

    /// Forgets the cached groups, so a reload also picks up changed memberships.
    func forgetGroups() {
        groupCache.withLock { $0.removeAll() }
    }

    /// How long looked-up groups are trusted before they are looked up again.
    static let groupCacheLifetime: Duration = .seconds(30)
    private let groupCache = Mutex<[UInt32: CachedGroups]>([:])

    /// A uid's groups as one lookup found them, and the reload they were looked up under.
    private struct CachedGroups {
        var groups: Set<UInt32>
        var expires: ContinuousClock.Instant
        var generation: UInt64
    }
}

/// The identity of a long-lived caller (a live subscription), looked up again after each
/// reload and at least every `Trust.groupCacheLifetime`, so that a membership that is gone
/// (`gpasswd -d`) stops counting for subscriptions already running, as it does for new calls.
/// A lookup may block (NSS, LDAP), so `current` and `isStale` never do one: only `refresh`,
/// which is called with no lock held, from the subscription's own task, never from the thread
/// that publishes events.
final class FollowedIdentity: Sendable {
    private struct Known {
        var identity: CallerIdentity
        var generation: UInt64
        var lookedUp: ContinuousClock.Instant
    }

    private let trust: Trust
    private let peer: PeerCredentials
    private let known: Mutex<Known>

    init(of peer: PeerCredentials, trust: Trust) {
        self.trust = trust
        self.peer = peer
        let generation = trust.generation
        known = Mutex(Known(identity: trust.identity(of: peer, always: true), generation: generation, lookedUp: .now))
    }

    /// The identity as last looked up.
    var current: CallerIdentity { known.withLock { $0.identity } }

    /// Whether a reload happened or the last lookup is old: `refresh` would look it up.
    var isStale: Bool {
        let generation = trust.generation
        return known.withLock {
            $0.generation != generation || ContinuousClock.now - $0.lookedUp >= Trust.groupCacheLifetime
        }
    }

    /// Looks the identity up again if a reload happened or the last lookup is old.
    func refresh() {
        guard isStale else { return }
        let generation = trust.generation
        let identity = trust.identity(of: peer, always: true)
        known.withLock { $0 = Known(identity: identity, generation: generation, lookedUp: .now) }
    }
}
