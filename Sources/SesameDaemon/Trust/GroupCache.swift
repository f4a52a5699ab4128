import Synchronization

/// Each uid's supplementary groups from the user database, remembered for a while: a lookup may
/// go to LDAP or sssd and block, and a busy client makes many calls. They are the same for every
/// process of the uid; the primary group of each process is added by the caller.
final class GroupCache: Sendable {
    /// How long looked-up groups are trusted before they are looked up again.
    static let lifetime: Duration = .seconds(30)

    /// A uid's groups as one lookup found them, and the reload they were looked up under.
    private struct Entry {
        var groups: Set<UInt32>
        var expires: ContinuousClock.Instant
        var generation: UInt64
    }

    /// A uid's supplementary groups: the user database, or a test's own.
    private let lookUp: @Sendable (UInt32) -> Set<UInt32>
    private let entries = Mutex<[UInt32: Entry]>([:])

    init(lookUp: @escaping @Sendable (UInt32) -> Set<UInt32>) {
        self.lookUp = lookUp
    }

    /// The groups of `uid` under the policy of reload `generation`. A lookup that began before a
    /// reload may end after it: what it found is kept for its own generation only, so the lookups
    /// after the reload do not take the memberships from before.
    func groups(of uid: UInt32, generation: UInt64) -> Set<UInt32> {
        let now = ContinuousClock.now
        if let cached = entries.withLock({ $0[uid] }), cached.expires > now, cached.generation == generation {
            return cached.groups
        }
        let groups = lookUp(uid)
        entries.withLock { entries in
            if entries.count > 4096 { entries.removeAll() }
            entries[uid] = Entry(groups: groups, expires: now + Self.lifetime, generation: generation)
        }
        return groups
    }

    /// Forgets every uid's groups, so a reload also picks up changed memberships.
    func forget() {
        entries.withLock { $0.removeAll() }
    }
}
