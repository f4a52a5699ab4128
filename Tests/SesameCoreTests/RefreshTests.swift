import Foundation
import SesameCore
import SesameCoreTesting
import Testing

@Suite struct RefreshTests {
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
        await #expect(throws: SessionError.refreshFailed(account: account.id, reason: "HTTP 503")) {
            try await fixture.engine.tokens(for: account.id)
        }
        _ = try await events.next()
        let failed = try #require(try await events.next())
        #expect(failed.kind == .refreshFailed && failed.state == .active)
        #expect(failed.retryAt == fixture.clock.now.addingTimeInterval(30))
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
}
