import FoundationEssentials

extension SessionEngine {
    /// Applies `changes` (nil removes an account), saves the result with its events in the
    /// accounts' histories, and only then makes it the engine's state and announces the events.
    /// If saving fails nothing changes.
    func commit(_ changes: [String: StoredAccount?], announcing new: [Announcement]) throws(SessionError) {
        var next = accounts
        for (id, change) in changes { next[id] = change }
        var changes = changes.merging(unsaved: unsavedAccounts, from: next)
        let events = events(of: (unsavedAnnouncements ?? []) + new, in: next)
        for event in events {
            guard var stored = next[event.account] else { continue }
            stored.record(event)
            next[event.account] = stored
            changes[event.account] = stored
        }
        // The planned refresh is the engine's own bookkeeping; every record shows it as saved.
        for (id, change) in changes {
            guard var stored = change, stored.account.nextRefreshAt != stored.refreshAt else { continue }
            stored.account.nextRefreshAt = stored.refreshAt
            next[id] = stored
            changes[id] = stored
        }
        let nextSequence = events.last?.sequence ?? lastSequence
        // Unordered on purpose: this runs on every change, and a store that wants order can sort.
        let snapshot = SessionSnapshot(accounts: Array(next.values), lastSequence: nextSequence)
        do {
            try persistence.save(snapshot, changes: changes)
        } catch {
            throw .storeFailed("\(error)")
        }
        unsavedAnnouncements = nil
        unsavedAccounts = []
        for event in events where event.kind.changesGrant {
            narrowed.forget(account: event.account)
        }
        accounts = next
        lastSequence = nextSequence
        for event in events {
            registry.publish(event)
            observer?(event)
        }
        self.changes.yield()
    }

    /// The events `announcements` make, numbered from the next sequence number, each showing
    /// its account as in `next` (or as it was, for one removed).
    private func events(of announcements: [Announcement], in next: [String: StoredAccount]) -> [AuthEvent] {
        let now = clock.now
        var sequence = lastSequence
        return announcements.compactMap { announcement in
            guard
                let subject = announcement.snapshot ?? next[announcement.account]?.account
                    ?? accounts[announcement.account]?.account
            else {
                return nil
            }
            sequence += 1
            return AuthEvent(
                sequence: sequence,
                time: now,
                kind: announcement.kind,
                account: subject,
                reason: announcement.reason,
                retryAt: announcement.retryAt,
                revokedRemotely: announcement.revokedRemotely,
                detail: announcement.detail
            )
        }
    }
}
