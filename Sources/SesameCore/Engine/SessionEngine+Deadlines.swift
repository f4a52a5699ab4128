import FoundationEssentials

extension SessionEngine {
    /// The earliest wall-clock time at which some account's state must change by itself.
    public func nextDeadline() -> Date? {
        // Changes the store has not taken yet are retried at the next check.
        if unsavedAnnouncements != nil { return clock.now }
        return accounts.values.compactMap(deadline(of:)).min()
    }

    /// Announces every deadline that has passed by the wall clock now: `expiring`, `expired`,
    /// `refreshTokenExpiring` ahead of a refresh token's end, and `needsLogin` once it runs
    /// out. Returns how many events went out.
    @discardableResult
    public func fireDueDeadlines() -> Int {
        let now = clock.now
        var fired = 0
        if let pending = unsavedAnnouncements, (try? commit([:], announcing: [])) != nil {
            fired += pending.count
        }
        for id in accounts.keys.sorted() {
            guard var stored = accounts[id], stored.tokens != nil else { continue }
            let announcements = dueAnnouncements(&stored, now: now)
            if !announcements.isEmpty {
                stored.account.updatedAt = now
                // A failed save is retried at the next check; the deadline is still due then.
                if (try? commit([id: stored], announcing: announcements)) != nil {
                    fired += announcements.count
                }
            }
            if let current = accounts[id], let due = plannedRefresh(of: current), due <= now {
                // Refresh ahead of expiry in the background; its outcome is announced by itself.
                _ = try? refreshTask(for: id)
            }
        }
        return fired
    }

    /// The events `stored` is due by `now`, with the account changed as they say.
    private func dueAnnouncements(_ stored: inout StoredAccount, now: Date) -> [Announcement] {
        guard let tokens = stored.tokens else { return [] }
        let id = stored.account.id
        if stored.account.state.canRefresh, let end = tokens.refreshTokenExpiresAt, end <= now {
            stored.account.state = .needsLogin
            return [Announcement(kind: .needsLogin, account: id)]
        }
        var announcements: [Announcement] = []
        if let warning = refreshTokenWarning(of: stored), warning <= now {
            stored.refreshTokenWarnedFor = tokens.refreshTokenExpiresAt
            announcements.append(Announcement(kind: .refreshTokenExpiring, account: id))
        }
        if stored.account.state == .active, let expiry = tokens.accessTokenExpiresAt {
            if !stored.expiringAnnounced && expiry.addingTimeInterval(-policy.expiringMargin.timeInterval) <= now {
                stored.expiringAnnounced = true
                announcements.append(Announcement(kind: .expiring, account: id))
            }
            if expiry <= now {
                stored.account.state = .expired
                announcements.append(Announcement(kind: .expired, account: id))
            }
        }
        return announcements
    }

    /// When `refreshTokenExpiring` is due for the account's refresh token: the margin before its
    /// end, unless it was announced for this refresh token already or the session cannot refresh.
    /// A provider may move the end on a little with every refresh (a sliding lifetime); that is
    /// not a new refresh token to warn of until the end has moved past the margin.
    private func refreshTokenWarning(of stored: StoredAccount) -> Date? {
        let margin = policy.refreshTokenWarningMargin.timeInterval
        guard stored.account.state.canRefresh, let end = stored.tokens?.refreshTokenExpiresAt else { return nil }
        if let warned = stored.refreshTokenWarnedFor, end.timeIntervalSince(warned) < margin { return nil }
        return end.addingTimeInterval(-margin)
    }

    /// Fires deadlines as they pass until the task is cancelled. It sleeps in steps of at most
    /// `wallClockCheckInterval` on the session clock (which never jumps) and decides by the
    /// wall clock, so a deadline passed during suspend, or skipped over by a clock jump, fires
    /// within one step.
    public func runDeadlines() async {
        guard let changeStream else { return }
        self.changeStream = nil
        var changes = changeStream.makeAsyncIterator()
        while !Task.isCancelled {
            fireDueDeadlines()
            if let next = nextDeadline() {
                // A deadline still due after firing is one whose save failed: retry it at the
                // next check rather than spin on a failing store.
                let remaining = next.timeIntervalSince(clock.now)
                let check = policy.wallClockCheckInterval.timeInterval
                let step = remaining > 0 ? min(remaining, check) : check
                do {
                    try await clock.sleep(for: .milliseconds(Int64((step * 1000).rounded(.up))))
                } catch {
                    return
                }
            } else if await changes.next() == nil {
                return
            }
        }
    }

    /// When the planned refresh of `stored` is due, if refreshing ahead is on, one is planned
    /// and none is under way.
    private func plannedRefresh(of stored: StoredAccount) -> Date? {
        let id = stored.account.id
        guard policy.refreshAhead, stored.account.state.canRefresh, !refreshState(of: id).isBusy else {
            return nil
        }
        return stored.refreshAt
    }

    private func deadline(of stored: StoredAccount) -> Date? {
        guard let tokens = stored.tokens else { return nil }
        var candidates: [Date] = []
        if stored.account.state.canRefresh, let end = tokens.refreshTokenExpiresAt {
            candidates.append(end)
        }
        if let warning = refreshTokenWarning(of: stored) {
            candidates.append(warning)
        }
        if let due = plannedRefresh(of: stored) {
            candidates.append(due)
        }
        if stored.account.state == .active, let expiry = tokens.accessTokenExpiresAt {
            candidates.append(
                stored.expiringAnnounced ? expiry : expiry.addingTimeInterval(-policy.expiringMargin.timeInterval)
            )
        }
        return candidates.min()
    }
}
