import Foundation
import SesameCore
import SesameCoreTesting
import Testing

@Suite(.timeLimit(.minutes(1))) struct RefreshTests {
    @Test func aThousandConcurrentCallersCauseExactlyOneRefresh() async throws {
        let refresher = ScriptedRefresher(gated: true)
        let fixture = EngineFixture(refresher: refresher)
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1000 {
                group.addTask { try await fixture.engine.tokens(for: account.id).accessToken }
            }
            // Everyone is queued behind the one refresh before the provider answers.
            while refresher.calls == 0 { await Task.yield() }
            for _ in 0..<10 { await Task.yield() }
            refresher.open()
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(refresher.calls == 1)
        #expect(tokens.count == 1000 && Set(tokens) == ["AT-2"])
        // Rotation: the answer carried no refresh token, so the old one is kept.
        let saved = try #require(fixture.persistence.saved?.accounts.first?.tokens)
        #expect(saved.refreshToken == "RT-1" && saved.accessToken == "AT-2")
        #expect(try await fixture.engine.account(account.id).state == .active)
        let refreshed = try await events.kinds(2)
        #expect(refreshed == [.loggedIn, .tokenRefreshed])
    }

    @Test func aProvidersOversizedAnswerIsKeptWithinTheBoundsNotRefused() async throws {
        let refresher = ScriptedRefresher()
        let fixture = EngineFixture(refresher: refresher)
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        var answer = fixture.tokens(lifetime: .seconds(3600), refresh: "RT-2", access: "AT-2")
        answer.idToken = String(repeating: "i", count: AccountFieldLimits.idToken + 1)
        answer.scopes = (0...AccountFieldLimits.scopes).map { "s\($0)" }
        answer.refreshTokenExpiresAt = Date.distantFuture
        refresher.answer(.success(answer))
        let fresh = try await fixture.engine.refresh(account.id)
        // The rotated refresh token is kept; what is out of bounds is not.
        #expect(fresh.refreshToken == "RT-2" && fresh.accessToken == "AT-2")
        #expect(fresh.idToken == nil && fresh.scopes == ["openid"] && fresh.refreshTokenExpiresAt == nil)
    }

    @Test func aCancelledCallerStopsWaitingWhileTheRefreshGoesOnForOthers() async throws {
        let refresher = ScriptedRefresher(gated: true)
        let fixture = EngineFixture(refresher: refresher)
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        let impatient = Task { try await fixture.engine.tokens(for: account.id) }
        while refresher.calls == 0 { await Task.yield() }
        // Cancelled while the provider has not answered (its connection closed, the daemon
        // stopping), a caller gives up then and there rather than when the refresh ends.
        impatient.cancel()
        let patient = Task { try await fixture.engine.tokens(for: account.id).accessToken }
        refresher.open()
        #expect(try await patient.value == "AT-2")
        #expect(refresher.calls == 1, "the refresh went on; the later caller joined it")
        // It gave up before the refresh ended: with the refreshed token it would have waited.
        #expect(try await impatient.value.accessToken == "AT-1", "the still-valid token, at once")
    }

    @Test func tokensAreRefreshedAheadOfExpiryWithoutAnyoneAsking() async throws {
        let fixture = EngineFixture(policy: SessionPolicy(expiringMargin: .seconds(30)))
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: "RT-2", access: "AT-2")))
        // Due 360 s to 396 s (a tenth of the lifetime, plus jitter) before expiry.
        fixture.clock.advance(by: .seconds(3600 - 400))
        let loop = Task { await fixture.engine.runDeadlines() }
        defer { loop.cancel() }
        // Once it has looked at the import (a second on), the loop sleeps until the refresh is
        // due and refreshes when it wakes: the test reads that sleep rather than stepping the
        // clock and guessing when the refresh has begun, which a busy machine made late.
        try await fixture.lookAtTheChange()
        let sleep = try #require(fixture.clock.sleepsLeft.first)
        let waited = sleep + .seconds(1)
        #expect((Duration.seconds(4)...Duration.seconds(40)).contains(waited), "refreshed 360 to 396 s before expiry")
        #expect(fixture.refresher.calls == 0, "not before it is due")
        fixture.clock.advance(by: sleep)
        #expect(await yieldUntil { fixture.refresher.calls > 0 })
        #expect(try await events.kinds(2) == [.loggedIn, .tokenRefreshed])
        #expect(fixture.refresher.calls == 1)
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-2")
    }

    @Test func aRefreshDueDuringSuspendRunsOnTheResumeNotice() async throws {
        let fixture = EngineFixture(policy: SessionPolicy(expiringMargin: .seconds(30)))
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount(lifetime: .seconds(3600))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: "RT-2", access: "AT-2")))
        let loop = Task { await fixture.engine.runDeadlines() }
        defer { loop.cancel() }
        try await fixture.lookAtTheChange()
        // The refresh is due ~54 min in: the loop sleeps the check interval towards it.
        try #require(fixture.clock.sleepsLeft == [.seconds(300)])
        // Asleep through the planned refresh but not past expiry. The test clock's sleeps stand
        // still meanwhile (as CLOCK_MONOTONIC's would), so only the notice can wake the loop.
        fixture.clock.suspend(for: .seconds(3300))
        #expect(fixture.refresher.calls == 0, "no timer fires during suspend")
        fixture.engine.wallClockChanged()
        #expect(try await events.kinds(2) == [.loggedIn, .tokenRefreshed])
        #expect(fixture.refresher.calls == 1)
    }

    @Test func theRefreshTimeLeavesShortLivedTokensAlone() {
        let now = Date(timeIntervalSince1970: 0)
        let policy = SessionPolicy(minimumRefreshInterval: .zero)
        #expect(policy.refreshTime(obtainedAt: now, expiry: now.addingTimeInterval(2)) == now.addingTimeInterval(1))
        let hour = policy.refreshTime(obtainedAt: now, expiry: now.addingTimeInterval(36000))!
        #expect(hour <= now.addingTimeInterval(36000 - 3600) && hour >= now.addingTimeInterval(36000 - 3960))
        #expect(SessionPolicy().refreshTime(obtainedAt: now, expiry: now.addingTimeInterval(20)) == nil)
        #expect(SessionPolicy().refreshTime(obtainedAt: now, expiry: now) == nil)
        #expect(
            SessionPolicy(refreshAhead: false).refreshTime(obtainedAt: now, expiry: now.addingTimeInterval(60)) == nil
        )
    }

    @Test func retriesBackOffExponentiallyUpToTheCap() {
        let policy = SessionPolicy(maximumRetryDelay: .seconds(300))
        let delays = (1...8).map { policy.retryDelay(afterFailures: $0, atLeast: .zero) }
        for (failures, delay) in zip(1..., delays) {
            let base = min(5 * pow(2, Double(failures - 1)), 300)
            #expect(delay >= base && delay <= base * 1.2, "after \(failures) failures")
        }
        #expect(policy.retryDelay(afterFailures: 1, atLeast: .seconds(120)) >= 120, "Retry-After is honoured")
        #expect(policy.retryDelay(afterFailures: 1, atLeast: .seconds(3600)) <= 360, "but not past the cap")
    }

    @Test func aValidTokenIsHandedOutWithoutRefreshing() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1")
        #expect(fixture.refresher.calls == 0)
    }

    @Test func aTransientFailureAnnouncesRefreshFailedWithARetryTime() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.transient(reason: "HTTP 503", retryAfter: .seconds(30))))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1", "still valid for 10 s")
        _ = try await events.next()
        let failed = try #require(try await events.next())
        #expect(failed.kind == .refreshFailed && failed.state == .active && failed.detail == "HTTP 503")
        let retryIn = try #require(failed.retryAt).timeIntervalSince(fixture.clock.now)
        #expect(retryIn >= 30 && retryIn <= 36, "the provider's 30 s, plus up to a fifth of jitter")
    }

    @Test func invalidGrantMeansNeedsLogin() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.needsLogin(reason: "invalid_grant")))
        await #expect(throws: SessionError.needsLogin(account.id)) { try await fixture.engine.tokens(for: account.id) }
        #expect(try await events.kinds(2) == [.loggedIn, .needsLogin])
        #expect(try await fixture.engine.account(account.id).state == .needsLogin)
        #expect(fixture.persistence.saved?.accounts.first?.tokens?.refreshToken == nil)
    }

    @Test func aRevokedGrantLogsOutWithReasonRevoked() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.revoked(reason: "revoked")))
        await #expect(throws: SessionError.needsLogin(account.id)) { try await fixture.engine.refresh(account.id) }
        _ = try await events.next()
        let needsLogin = try #require(try await events.next())
        let loggedOut = try #require(try await events.next())
        #expect(needsLogin.kind == .needsLogin)
        #expect(loggedOut.kind == .loggedOut && loggedOut.reason == .revoked && loggedOut.state == .loggedOut)
    }

    @Test func anExpiredTokenWithNoWayToRefreshIsTokenExpired() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10), refresh: nil)
        fixture.clock.advance(by: .seconds(11))
        await #expect(throws: SessionError.tokenExpired(account.id)) {
            try await fixture.engine.tokens(for: account.id)
        }
        #expect(fixture.refresher.calls == 0)
    }

    @Test func refreshedTokensThatCannotBeSavedAreKeptAndSavedLater() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: "RT-2", access: "AT-2")))
        fixture.persistence.failing = true
        await #expect(throws: SessionError.self) { try await fixture.engine.refresh(account.id) }
        // The provider rotated the refresh token; the new one must not be dropped.
        #expect(try await fixture.engine.heldTokens(for: account.id)?.refreshToken == "RT-2")
        #expect(fixture.persistence.saved?.accounts.first?.tokens?.refreshToken == "RT-1")
        #expect(await fixture.engine.nextDeadline() == fixture.clock.now, "the save is retried at the next check")
        fixture.persistence.failing = false
        #expect(await fixture.engine.fireDueDeadlines() == 1)
        #expect(fixture.persistence.saved?.accounts.first?.tokens?.refreshToken == "RT-2")
        #expect(try await events.kinds(2) == [.loggedIn, .tokenRefreshed], "announced once it is saved")
    }
}
