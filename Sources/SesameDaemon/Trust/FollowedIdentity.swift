import SesameVarlink
import Synchronization

/// The identity of a long-lived caller (a live subscription), looked up again after each
/// reload and at least every `GroupCache.lifetime`, so that a membership that is gone
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
            $0.generation != generation || ContinuousClock.now - $0.lookedUp >= GroupCache.lifetime
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
