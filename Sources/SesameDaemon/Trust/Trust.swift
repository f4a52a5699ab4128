import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Synchronization

/// The access policy and the per-uid limits in force, and what each uid holds now. A config
/// reload (SIGHUP) replaces policy and limits at once; every later check, including the event
/// filters of live subscriptions, sees the new ones. Its other jobs are types of their own:
/// `GroupCache` (who belongs to which group), `FollowedIdentity` (a subscriber's identity kept
/// current) and `OpenFileLimit`; the connection gate is the extension below.
final class Trust: Sendable {
    /// Everything a reload or a request changes, under one lock.
    private struct State {
        var policy: AccessPolicy
        var limits: UserLimits
        var held: [LimitedResource: [UInt32: Int]] = [:]
        var providerCalls = MinuteAllowance()
        var changes = MinuteAllowance()
        /// Grows by one at every reload.
        var generation: UInt64 = 0
    }

    private let state: Mutex<State>
    private let groupCache: GroupCache
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
        groupCache = GroupCache(lookUp: groups)
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
        groupCache.forget()
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
        providerCallWait(for: uid, at: now).map {
            VarlinkError(.tooManyProviderCalls(limit: limits.providerCallsPerMinute, retryAfter: $0))
        }
    }

    /// Spends one call that reaches a provider from `uid`'s allowance at `now`: nil when there
    /// was one (or `uid` is root's), else how many seconds until there will be.
    func providerCallWait(for uid: UInt32, at now: Date) -> Int? {
        guard uid != 0 else { return nil }
        return state.withLock { state in
            state.providerCalls.spend(for: uid, perMinute: state.limits.providerCallsPerMinute, at: now)
        }
    }

    /// Spends one change written to the store from `uid`'s allowance at `now`, or returns the
    /// error to answer. Root is not limited.
    func spendChange(for uid: UInt32, at now: Date) -> VarlinkError? {
        guard uid != 0 else { return nil }
        return state.withLock { state in
            let limit = state.limits.changesPerMinute
            return state.changes.spend(for: uid, perMinute: limit, at: now).map {
                VarlinkError(.tooManyChanges(limit: limit, retryAfter: $0))
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
        let groups = groupCache.groups(of: peer.uid, generation: generation)
        return CallerIdentity(uid: peer.uid, groups: groups.union([peer.gid]))
    }

}

/// The gate every new connection passes before it is read: its uid's share of connections, and
/// the total, which the process's open-file limit bounds.
extension Trust: VarlinkConnectionGate {
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

    /// Gives back the connection `admit` let in.
    func release(_ peer: PeerCredentials) {
        release(.connection, for: peer.uid)
    }
}
