import FoundationEssentials

/// The events kept with each account in the store, so that a subscriber that resumes after a
/// restart is replayed what it missed, and the account's record says when it last refreshed
/// and why it last failed.
///
/// Kept per account, not as one list for the whole daemon, so that an account's own history is
/// not pushed out by other accounts', and the store grows by a bounded amount per account
/// (accounts per user are bounded by the configuration). What can be replayed after a restart
/// is shared, though: see `replayable`.
public enum AccountHistory {
    /// How many events each account keeps. Events happen only while sesamed runs, so a
    /// subscriber that resumes after a restart has missed the few just before it; this covers
    /// a day of hourly refreshes with their `expiring` notices.
    public static let limit = 16

    /// The kept events that can be replayed after a restart, oldest first: the longest run of
    /// consecutive sequence numbers that ends at `lastSequence`. An event that is no longer
    /// kept (pushed out of its account's history, or gone with a removed account) breaks the
    /// run, so a subscriber from before the break is resynced rather than replayed events
    /// with a hole among them.
    public static func replayable(in accounts: some Sequence<StoredAccount>, through lastSequence: UInt64)
        -> [AuthEvent]
    {
        let kept = accounts.flatMap { $0.history ?? [] }.sorted { $0.sequence > $1.sequence }
        var run: [AuthEvent] = []
        var expected = lastSequence
        for event in kept where event.sequence <= lastSequence {
            guard expected > 0, event.sequence == expected else { break }
            run.append(event)
            expected -= 1
        }
        return run.reversed()
    }
}

extension StoredAccount {
    /// Keeps `event` in the account's history (dropping the oldest beyond the limit) and in
    /// the record's last refresh and last error.
    mutating func record(_ event: AuthEvent) {
        var kept = history ?? []
        kept.append(event)
        if kept.count > AccountHistory.limit { kept.removeFirst(kept.count - AccountHistory.limit) }
        history = kept
        switch event.kind {
        case .tokenRefreshed:
            account.lastRefreshAt = event.time
        case .refreshFailed, .needsLogin:
            guard let detail = event.detail else { return }
            account.lastError = detail
            account.lastErrorAt = event.time
        default:
            return
        }
    }
}
