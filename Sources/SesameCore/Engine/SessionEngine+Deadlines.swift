import FoundationEssentials

extension SessionEngine {
    /// The earliest wall-clock time at which some account's state must change by itself.
    public func nextDeadline() -> Date? {
        // Changes the store has not taken yet are retried at the next check.
        if unsavedAnnouncements != nil { return clock.now }
        let revocations = accounts.values.compactMap(replacedGrantsDeadline(of:))
        return (accounts.values.compactMap(deadline(of:)) + revocations).min()
    }

    /// Announces every deadline that has passed by the wall clock now: `expiring`, `expired`,
    /// `refreshTokenExpiring` ahead of a refresh token's end, and `needsLogin` once it runs
    /// out. Returns how many events went out.
    @discardableResult
    public func fireDueDeadlines() -> Int {
        let now = clock.now
        var fired = 0
        startDueRevocations(now: now)
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
            let why = "the refresh token ran out at \(end.formatted(.iso8601))"
            return [Announcement(kind: .needsLogin, account: id, detail: why)]
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

    /// Fires deadlines as they pass until the task is cancelled. Between them it sleeps on the
    /// session clock (which is never set) until the next deadline, or `wallClockCheckInterval`
    /// if that comes first, and decides by the wall clock. Whatever may move a deadline wakes
    /// it early instead: a change to the accounts, and `wallClockChanged()`, the notice that the
    /// wall clock was set. So an idle daemon sleeps until its next deadline.
    public func runDeadlines() async {
        guard let changeStream else { return }
        self.changeStream = nil
        // The alarm wakes the loop through the same stream as changes do.
        var wakeUps = changeStream.makeAsyncIterator()
        let spacing = policy.deadlineScanSpacing.timeInterval
        var scanned: Date?
        var alarm: Task<Void, Never>?
        defer { alarm?.cancel() }
        while !Task.isCancelled {
            // Looking means going through every account, so a burst of changes (a thousand
            // imports) is looked at once per spacing, not once per change. Measured by the wall
            // clock, so a resume, or the clock set back or on by more than the spacing, is
            // looked at at once.
            let since = scanned.map { clock.now.timeIntervalSince($0) } ?? .infinity
            if since >= 0, since < spacing {
                alarm = setAlarm(in: spacing - since)
            } else {
                fireDueDeadlines()
                scanned = clock.now
                alarm = nextDeadline().map { setAlarm(in: step(to: $0)) }
            }
            // Firing a deadline changes an account, which wakes the loop too: it looks again
            // a spacing later, and the alarm just set gives way to that.
            guard await wakeUps.next() != nil else { return }
            alarm?.cancel()
        }
    }

    /// Wakes the deadline loop to read the wall clock again: the clock was set (by NTP stepping
    /// it, a user, a restored virtual machine). Deadlines are wall-clock times, and the loop
    /// sleeps on a clock that is never set. Calling it after a resume does no harm.
    public nonisolated func wallClockChanged() {
        changes.yield()
    }

    /// How long the deadline loop sleeps towards `next`: until it is due, or `wallClockCheckInterval`
    /// if that is sooner (the wall clock may have been set with nobody saying so). A deadline
    /// still due after firing is one whose save failed: it is tried again after
    /// `deadlineScanSpacing`, rather than spinning on a failing store.
    private func step(to next: Date) -> TimeInterval {
        let remaining = next.timeIntervalSince(clock.now)
        guard remaining > 0 else { return policy.deadlineScanSpacing.timeInterval }
        return min(remaining, policy.wallClockCheckInterval.timeInterval)
    }

    /// A task that wakes the deadline loop after `seconds` on the session clock, or a
    /// millisecond, so that a policy of zero intervals cannot make the loop spin.
    private func setAlarm(in seconds: TimeInterval) -> Task<Void, Never> {
        let (clock, changes) = (clock, changes)
        let milliseconds = max(1, Self.roundedUp(seconds))
        return Task {
            guard (try? await clock.sleep(for: .milliseconds(milliseconds))) != nil else { return }
            changes.yield()
        }
    }

    /// `seconds` in whole milliseconds, rounded up so that a sleep never ends before its time.
    private static func roundedUp(_ seconds: TimeInterval) -> Int64 {
        Int64((seconds * 1000).rounded(.up))
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
