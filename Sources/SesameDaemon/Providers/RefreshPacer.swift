import FoundationEssentials
import SesameCore
import SesameProviders
import Synchronization

/// Keeps each provider's pacing of refreshes (`RefreshPacing`): remembers when each account was
/// last refreshed and holds back a refresh its provider's rules do not allow yet, before the
/// provider is asked. Every refresh counts (planned, asked for, reported rejected), because the
/// provider counts every request. The times are kept in memory: after a restart an account's
/// first refresh is allowed.
final class RefreshPacer: Sendable {
    private let refreshes = Mutex<[String: [Date]]>([:])

    /// How many accounts' refreshes are remembered.
    var remembered: Int { refreshes.withLock { $0.count } }

    /// Admits a refresh of `account` at `now`, counting it, or returns the paced failure that
    /// says when the next one may be made.
    func admit(_ account: Account, pacing: RefreshPacing, now: Date) -> RefreshError? {
        guard !pacing.isUnpaced else { return nil }
        return refreshes.withLock { byAccount -> RefreshError? in
            let since = now.addingTimeInterval(-pacing.memory.timeInterval)
            var earlier = (byAccount[account.id] ?? []).filter { $0 > since }
            if let next = pacing.nextAllowed(after: earlier, now: now) {
                byAccount[account.id] = earlier
                return .paced(until: next, reason: RefreshHold.reason(until: next, rule: pacing.rule))
            }
            earlier.append(now)
            byAccount[account.id] = earlier
            Self.forgetOld(&byAccount, now: now)
            return nil
        }
    }

    /// The longest any pacing looks back: a provider file's `min_refresh_interval` is at most
    /// seven days.
    static let longestMemory: Duration = .seconds(7 * 86400)

    /// Drops what no pacing still looks at, once there is much to drop: accounts that were
    /// removed, or are no longer refreshed, are forgotten.
    private static func forgetOld(_ byAccount: inout [String: [Date]], now: Date) {
        guard byAccount.count > 1024 else { return }
        let oldest = now.addingTimeInterval(-longestMemory.timeInterval)
        byAccount = byAccount.filter { ($0.value.last ?? .distantPast) > oldest }
    }
}
