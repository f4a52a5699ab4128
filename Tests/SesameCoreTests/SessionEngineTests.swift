import Foundation
import SesameCore
import SesameCoreTesting
import Testing

@Suite(.timeLimit(.minutes(1))) struct SessionEngineTests {
    @Test func importAnnouncesLoggedInWithoutTokenMaterial() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount()
        let event = try #require(try await events.next())
        #expect(event.kind == .loggedIn && event.account == account.id && event.sequence == 1)
        #expect(event.state == .active && event.owner == 1000 && event.provider == "google")
        let encoded = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        #expect(!encoded.contains("AT-1") && !encoded.contains("RT-1"))
        #expect(fixture.persistence.saved?.lastSequence == 1)
    }

    @Test func reimportingTheSameSubjectRenewsTheSameAccount() async throws {
        let fixture = EngineFixture()
        let first = try await fixture.importAccount()
        let second = try await fixture.importAccount()
        #expect(first.id == second.id)
        #expect(await fixture.engine.list().count == 1)
    }

    @Test func aRenewalWithoutARefreshTokenKeepsTheOneHeldButNotAfterLogout() async throws {
        let fixture = EngineFixture()
        let first = try await fixture.importAccount(refresh: "RT-1")
        let renewed = try await fixture.importAccount(refresh: nil)
        #expect(renewed.id == first.id && renewed.refreshTokenExpiresAt == first.refreshTokenExpiresAt)
        #expect(fixture.persistence.saved?.accounts.first?.tokens?.refreshToken == "RT-1")
        _ = try await fixture.engine.logout(first.id, reason: .user)
        _ = try await fixture.importAccount(refresh: nil)
        #expect(fixture.persistence.saved?.accounts.first?.tokens?.refreshToken == nil)
    }

    @Test func expiringFiresAtTheMarginAndExpiredAtExpiry() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount(lifetime: .seconds(600))
        #expect(try await events.kinds(1) == [.loggedIn])
        fixture.clock.advance(by: .seconds(539))
        #expect(await fixture.engine.fireDueDeadlines() == 0)
        fixture.clock.advance(by: .seconds(1))
        #expect(await fixture.engine.fireDueDeadlines() == 1)
        #expect(try await events.kinds(1) == [.expiring])
        fixture.clock.advance(by: .seconds(59))
        #expect(await fixture.engine.fireDueDeadlines() == 0)
        fixture.clock.advance(by: .seconds(1))
        #expect(await fixture.engine.fireDueDeadlines() == 1)
        let expired = try #require(try await events.next())
        #expect(expired.kind == .expired && expired.state == .expired)
        #expect(await fixture.engine.fireDueDeadlines() == 0, "each deadline fires once")
    }

    @Test func aWallClockJumpPastExpiryFiresBothInOrder() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount(lifetime: .seconds(600))
        fixture.clock.jumpWallClock(by: .seconds(3600))
        #expect(await fixture.engine.fireDueDeadlines() == 2)
        let kinds = try await events.kinds(3)
        #expect(kinds == [.loggedIn, .expiring, .expired])
    }

    @Test func afterASuspendPastTheDeadlineTheResumeNoticeFiresIt() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount(lifetime: .seconds(600))
        #expect(try await events.kinds(1) == [.loggedIn])
        let loop = Task { await fixture.engine.runDeadlines() }
        defer { loop.cancel() }
        try await fixture.lookAtTheChange()
        try #require(fixture.clock.sleepsLeft == [.seconds(300)])
        // The lid closes for an hour: wall time moves, the test clock's sleeps stand still (as
        // CLOCK_MONOTONIC's would), and no timer fires.
        fixture.clock.suspend(for: .seconds(3600))
        // The lid opens, and the system says the wall clock moved: the loop looks at once.
        fixture.engine.wallClockChanged()
        #expect(try await events.kinds(2) == [.expiring, .expired])
    }

    @Test func anIdleLoopSleepsUntilTheNextDeadline() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount(lifetime: .seconds(240))
        #expect(try await events.kinds(1) == [.loggedIn])
        let loop = Task { await fixture.engine.runDeadlines() }
        defer { loop.cancel() }
        try await fixture.lookAtTheChange()
        // `expiring` is due 60 s before the end: one sleep until then, not a wake-up a second.
        try #require(fixture.clock.sleepsLeft == [.seconds(179)])
        fixture.clock.advance(by: .seconds(179))
        #expect(try await events.kinds(1) == [.expiring])
    }

    @Test func theLoopNeverSleepsLongerThanTheCheckInterval() async throws {
        let fixture = EngineFixture()
        _ = try await fixture.importAccount(lifetime: .seconds(7 * 86400))
        let loop = Task { await fixture.engine.runDeadlines() }
        try await fixture.lookAtTheChange()
        // A wall clock set with nobody saying so is seen within 5 minutes.
        #expect(fixture.clock.sleepsLeft == [.seconds(300)])
        // And a stopped loop leaves no alarm behind.
        loop.cancel()
        #expect(await yieldUntil { fixture.clock.sleeperCount == 0 })
    }

    @Test func aChangeBringingAnEarlierDeadlineWakesTheSleepingLoop() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount(lifetime: .seconds(240))
        let loop = Task { await fixture.engine.runDeadlines() }
        defer { loop.cancel() }
        try await fixture.lookAtTheChange()
        try #require(fixture.clock.sleepsLeft == [.seconds(179)])
        // A second account, expiring sooner, while the loop sleeps towards the first's deadline.
        _ = try await fixture.engine.importSession(
            ImportedSession(provider: "p", subject: "second", owner: 1, tokens: fixture.tokens(lifetime: .seconds(90)))
        )
        try await fixture.lookAtTheChange()
        try #require(fixture.clock.sleepsLeft == [.seconds(29)])
        fixture.clock.advance(by: .seconds(29))
        #expect(try await events.kinds(3) == [.loggedIn, .loggedIn, .expiring])
    }

    @Test func theLoopWaitsForDeadlinesAddedWhileIdle() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let loop = Task { await fixture.engine.runDeadlines() }
        defer { loop.cancel() }
        _ = try await fixture.importAccount(lifetime: .seconds(90))
        #expect(try await events.kinds(1) == [.loggedIn])
        for _ in 0..<30 {
            await fixture.clock.untilSleeping()
            fixture.clock.advance(by: .seconds(1))
        }
        #expect(try await events.kinds(1) == [.expiring])
    }

    @Test func aRefreshTokenThatRunsOutMeansNeedsLogin() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        var tokens = fixture.tokens(lifetime: .seconds(36000))
        tokens.refreshTokenExpiresAt = fixture.clock.now.addingTimeInterval(100)
        _ = try await fixture.engine.importSession(
            ImportedSession(provider: "p", subject: "s", owner: 1, tokens: tokens)
        )
        fixture.clock.advance(by: .seconds(100))
        await fixture.engine.fireDueDeadlines()
        #expect(try await events.kinds(2) == [.loggedIn, .needsLogin])
    }

    @Test func aRefreshTokenNearItsEndIsAnnouncedOnceBeforeItRunsOut() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        var tokens = fixture.tokens(lifetime: .seconds(30 * 86400))
        let end = fixture.clock.now.addingTimeInterval(10 * 86400)
        tokens.refreshTokenExpiresAt = end
        _ = try await fixture.engine.importSession(
            ImportedSession(provider: "p", subject: "s", owner: 1, tokens: tokens)
        )
        // Seven days before the end (the default margin), and only once.
        fixture.clock.advance(by: .seconds(3 * 86400 - 1))
        await fixture.engine.fireDueDeadlines()
        fixture.clock.advance(by: .seconds(1))
        await fixture.engine.fireDueDeadlines()
        fixture.clock.advance(by: .seconds(86400))
        await fixture.engine.fireDueDeadlines()
        #expect(await fixture.engine.nextDeadline() == end)
        fixture.clock.advance(by: .seconds(6 * 86400))
        await fixture.engine.fireDueDeadlines()
        let kinds = try await events.kinds(3)
        #expect(kinds == [.loggedIn, .refreshTokenExpiring, .needsLogin])
        #expect(fixture.persistence.saved?.accounts.first?.refreshTokenWarnedFor == end)
    }

    @Test func logoutWipesTokensAndAnnouncesLoggedOut() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount()
        let after = try await fixture.engine.logout(account.id)
        #expect(after.state == .loggedOut)
        let event = try #require(try await events.kinds(2).last)
        #expect(event == .loggedOut)
        await #expect(throws: SessionError.needsLogin(account.id)) { try await fixture.engine.tokens(for: account.id) }
        #expect(fixture.persistence.saved?.accounts.first?.tokens == nil)
        // Logging out twice is not a transition the state machine allows.
        await #expect(
            throws: SessionError.illegalTransition(
                IllegalTransitionError(account: account.id, from: .loggedOut, to: .loggedOut)
            )
        ) {
            try await fixture.engine.logout(account.id)
        }
        try await fixture.engine.remove(account.id)
        #expect(try await events.kinds(1) == [.accountRemoved])
        #expect(await fixture.engine.list().isEmpty)
    }

    @Test func aChangeThatCannotBeSavedIsNeitherMadeNorAnnounced() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount()
        fixture.persistence.failing = true
        await #expect(throws: SessionError.self) { try await fixture.engine.logout(account.id) }
        #expect(try await fixture.engine.account(account.id).state == .active)
        #expect(await fixture.engine.currentSequence == 1)
        fixture.persistence.failing = false
        _ = try await fixture.engine.logout(account.id)
        let kinds = try await events.kinds(2)
        #expect(kinds == [.loggedIn, .loggedOut])
    }

    @Test func sequenceNumbersContinueFromTheSnapshot() async throws {
        let fixture = EngineFixture(snapshot: SessionSnapshot(lastSequence: 41))
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount()
        #expect(try await events.next()?.sequence == 42)
    }

    /// With a restart in between too: each account keeps its events in the store.
    @Test(arguments: [false, true]) func aResumingSubscriberGetsExactlyWhatItMissed(restart: Bool) async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(600))
        let seen = await fixture.engine.currentSequence
        fixture.clock.advance(by: .seconds(600))
        await fixture.engine.fireDueDeadlines()
        _ = try await fixture.engine.logout(account.id)
        let engine = restart ? try fixture.restarted().engine : fixture.engine
        let (_, backlog, current, _) = await engine.subscribe(filter: EventFilter(), since: seen)
        guard case .replay(let missed) = backlog else {
            Issue.record("expected a replay")
            return
        }
        #expect(missed.map(\.kind) == [.expiring, .expired, .loggedOut])
        #expect(missed.map(\.sequence) == Array((seen + 1)...current))
    }

    /// A store from before accounts kept their events has nothing to replay.
    @Test func aSubscriberFromBeforeARestartWithNoKeptEventsGetsTheFullState() async throws {
        let account = Account(id: "a", provider: "p", ownerUID: 1, subject: "s", state: .active, createdAt: Date())
        let fixture = EngineFixture(
            snapshot: SessionSnapshot(accounts: [StoredAccount(account: account, tokens: nil)], lastSequence: 9)
        )
        let (_, backlog, current, accounts) = await fixture.engine.subscribe(filter: EventFilter(), since: 5)
        guard case .resync = backlog else {
            Issue.record("expected a resync")
            return
        }
        #expect(current == 9 && accounts.map(\.id) == ["a"])
    }

    @Test func aLogoutSaysNotRevokedWhenTheTokensChangedWhileRevoking() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount()
        let revoked = try await fixture.engine.heldTokens(for: account.id)
        // A new login of the same account lands while the provider revokes the old tokens.
        _ = try await fixture.importAccount(lifetime: .seconds(60))
        _ = try await fixture.engine.logout(account.id, revokedRemotely: true, revokedTokens: revoked)
        let kinds = try await events.kinds(2)
        let loggedOut = try #require(try await events.next())
        #expect(kinds == [.loggedIn, .loggedIn] && loggedOut.kind == .loggedOut)
        #expect(loggedOut.revokedRemotely == false)
    }
}
