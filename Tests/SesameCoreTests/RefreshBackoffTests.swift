import Foundation
import SesameCore
import SesameCoreTesting
import Testing

/// Refreshes that failed: callers backed off, the provider's Retry-After held, rejected tokens
/// refreshed once per token refused, and what is handed out meanwhile.
@Suite struct RefreshBackoffTests {
    @Test func callersDoNotRefreshAgainWhileBackingOff() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.transient(reason: "HTTP 503", retryAfter: .seconds(30))))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1")
        for _ in 0..<5 {
            #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1")
        }
        #expect(fixture.refresher.calls == 1)
        fixture.clock.advance(by: .seconds(30))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-2", "after the backoff it tries")
    }

    /// A caller whose token has expired does not wait out the backoff: the provider may be back.
    /// It tries at once, and callers together at most once per minimumRejectedRefreshInterval.
    @Test func anExpiredTokenIsTriedAgainOnDemandDuringTheBackoffAtMostOncePerInterval() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.transient(reason: "HTTP 503", retryAfter: .seconds(5))))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1")
        fixture.clock.advance(by: .seconds(11))
        fixture.refresher.answer(.failure(.transient(reason: "HTTP 503", retryAfter: .seconds(5))))
        await #expect(throws: SessionError.self) { try await fixture.engine.tokens(for: account.id) }
        #expect(fixture.refresher.calls == 2, "tried at once, not after the backoff")
        fixture.clock.advance(by: .seconds(5))
        await #expect(throws: SessionError.tokenExpired(account.id)) {
            try await fixture.engine.tokens(for: account.id)
        }
        #expect(fixture.refresher.calls == 2, "not again within the interval")
        fixture.clock.advance(by: .seconds(5))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-2", "the provider is back")
    }

    /// A provider's Retry-After (RFC 9110 §10.2.3) holds even callers whose token has expired;
    /// once it has passed they may try again without waiting out the rest of the backoff.
    @Test func anExpiredTokenWaitsForTheProvidersRetryAfter() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.transient(reason: "HTTP 429", retryAfter: .seconds(120))))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1")
        fixture.clock.advance(by: .seconds(60))
        await #expect(throws: SessionError.tokenExpired(account.id)) {
            try await fixture.engine.tokens(for: account.id)
        }
        #expect(fixture.refresher.calls == 1, "the provider asked for 120 s")
        fixture.clock.advance(by: .seconds(60))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-2", "then it tries")
    }

    /// A reload that changes the provider's settings ends what the old ones met: a caller whose
    /// token has expired refreshes at once.
    @Test func aReloadedProviderEndsItsAccountsHolds() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.transient(reason: "bad CA file", retryAfter: .seconds(86400))))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1")
        fixture.clock.advance(by: .seconds(60))
        await #expect(throws: SessionError.tokenExpired(account.id)) {
            try await fixture.engine.tokens(for: account.id)
        }
        await fixture.engine.forgetHolds(ofProvider: "google")
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-2")
    }

    @Test func garbageFromTheProviderAlsoBacksCallersOff() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.failure(.invalidResponse(reason: "malformed JSON")))
        fixture.clock.advance(by: .seconds(11))
        await #expect(throws: SessionError.refreshFailed(account: account.id, reason: "malformed JSON")) {
            try await fixture.engine.tokens(for: account.id)
        }
        await #expect(throws: SessionError.tokenExpired(account.id)) {
            try await fixture.engine.tokens(for: account.id)
        }
        #expect(fixture.refresher.calls == 1, "no planned refresh, but the backoff still holds callers")
    }

    /// A refusal is acted on once per token refused, not once per interval: a new token's
    /// refusal right after a refresh (a planned one, or another report's) is refreshed at once,
    /// and a token the provider hands back unchanged is not refreshed for again.
    @Test func rejectedTokensRefreshOncePerTokenRefused() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        #expect(try await fixture.engine.refresh(account.id, ifCurrentAccessToken: "AT-1"))
        #expect(try await !fixture.engine.refresh(account.id, ifCurrentAccessToken: "AT-1"), "no longer current")
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-3")))
        #expect(try await fixture.engine.refresh(account.id, ifCurrentAccessToken: "AT-2"), "a new token, at once")
        #expect(fixture.refresher.calls == 2)
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-3")))
        #expect(try await !fixture.engine.refresh(account.id, ifCurrentAccessToken: "AT-3"), "handed back unchanged")
        #expect(try await !fixture.engine.refresh(account.id, ifCurrentAccessToken: "AT-3"), "already acted on")
        #expect(fixture.refresher.calls == 3)
    }

    /// A refusal right after a planned refresh is acted on: the planned refresh does not count
    /// as the refused token's.
    @Test func aRefusalJustAfterAPlannedRefreshRefreshes() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-2")))
        #expect(try await fixture.engine.refresh(account.id).accessToken == "AT-2")
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: nil, access: "AT-3")))
        #expect(try await fixture.engine.refresh(account.id, ifCurrentAccessToken: "AT-2"))
        #expect(fixture.refresher.calls == 2)
    }

    @Test func rejectedTokensSayNotRefreshedWhenNothingCouldBeRefreshed() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        fixture.refresher.answer(.failure(.unavailable))
        #expect(try await !fixture.engine.refresh(account.id, ifCurrentAccessToken: "AT-1"))
        #expect(fixture.refresher.calls == 1)
    }

    @Test func anEarlyRefreshThatFailsHandsOutTheStillValidTokenButAnExpiredOneIsAnError() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(40))
        fixture.clock.advance(by: .seconds(11))
        fixture.refresher.answer(.failure(.transient(reason: "HTTP 503", retryAfter: .seconds(1))))
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1", "29 s left")
        fixture.clock.advance(by: .seconds(30))
        await #expect(throws: SessionError.refreshFailed(account: account.id, reason: "HTTP 503")) {
            try await fixture.engine.tokens(for: account.id)
        }
    }
}
