import Foundation
import SesameCore
import SesameCoreTesting
import Testing

/// A second login of the same person replaces the account's grant: the old one is revoked at the
/// provider once the new one is saved, kept and tried again when the provider does not confirm,
/// dropped (and said) when revoking it cannot help, and `loggedIn` says which.
@Suite struct ReplacedGrantTests {
    private func relogin(_ fixture: EngineFixture, refresh: String?, access: String) async throws -> LoginOutcome {
        try await fixture.engine.logIn(
            ImportedSession(
                provider: "google",
                subject: "alice",
                owner: 1000,
                tokens: fixture.tokens(lifetime: .seconds(3600), refresh: refresh, access: access)
            )
        )
    }

    @Test func theReplacedGrantIsRevokedAndTheLoginSaysSo() async throws {
        let fixture = EngineFixture()
        let events = await fixture.subscribe()
        _ = try await fixture.importAccount()
        let outcome = try await relogin(fixture, refresh: "RT-2", access: "AT-2")
        #expect(outcome.replacedGrant == ReplacedGrantRevocation(confirmed: true))
        #expect(fixture.refresher.revoked.map(\.refreshToken) == ["RT-1"])
        #expect(fixture.persistence.saved?.accounts.first?.replacedGrants == nil)
        #expect(try await events.kinds(2) == [.loggedIn, .loggedIn])
    }

    /// The same grant again (the same refresh token, or none new) replaces nothing.
    @Test func theSameGrantAgainRevokesNothing() async throws {
        let fixture = EngineFixture()
        _ = try await fixture.importAccount()
        #expect(try await relogin(fixture, refresh: "RT-1", access: "AT-2").replacedGrant == nil)
        #expect(try await relogin(fixture, refresh: nil, access: "AT-3").replacedGrant == nil)
        #expect(fixture.refresher.revoked.isEmpty)
    }

    @Test func aRevocationThatFailsIsKeptInTheStoreAndTriedAgainAfterTheBackoff() async throws {
        let fixture = EngineFixture()
        _ = try await fixture.importAccount()
        fixture.refresher.failRevocations(with: RevocationError(reason: "HTTP 503", isFinal: false))
        let outcome = try await relogin(fixture, refresh: "RT-2", access: "AT-2")
        #expect(outcome.replacedGrant == ReplacedGrantRevocation(confirmed: false, reason: "HTTP 503", retrying: true))
        let kept = try #require(fixture.persistence.saved?.accounts.first?.replacedGrants)
        #expect(kept.map(\.refreshToken) == ["RT-1"])
        // What revoking reads, and no more: a store holding replaced grants stays near its size.
        #expect(kept.map(\.scopes) == [[]])
        let retry = try #require(await fixture.engine.nextDeadline())
        #expect(retry > fixture.clock.now, "not again at once")
        fixture.refresher.failRevocations(with: nil)
        fixture.clock.advance(by: .seconds(retry.timeIntervalSince(fixture.clock.now) + 1))
        await fixture.engine.fireDueDeadlines()
        try await waitUntil { fixture.refresher.revoked.map(\.refreshToken) == ["RT-1"] }
        try await waitUntil { fixture.persistence.saved?.accounts.first?.replacedGrants == nil }
    }

    /// A grant kept to revoke that is handed in again is the current grant, never revoked.
    @Test func aKeptGrantHandedInAgainIsNotRevoked() async throws {
        let fixture = EngineFixture()
        _ = try await fixture.importAccount()
        fixture.refresher.failRevocations(with: RevocationError(reason: "HTTP 503", isFinal: false))
        _ = try await relogin(fixture, refresh: "RT-2", access: "AT-2")
        fixture.refresher.failRevocations(with: nil)
        let again = try await relogin(fixture, refresh: "RT-1", access: "AT-3")
        #expect(fixture.refresher.revoked.map(\.refreshToken) == ["RT-2"], "RT-1 is the current grant again")
        #expect(again.replacedGrant == ReplacedGrantRevocation(confirmed: true))
        #expect(fixture.persistence.saved?.accounts.first?.replacedGrants == nil)
    }

    /// A grant that can never be revoked (the provider offers no revocation, or would end the
    /// new grant with it) is not kept for ever: the login says why, and it is dropped.
    @Test func aGrantThatCannotBeRevokedIsDroppedAndSaid() async throws {
        let fixture = EngineFixture()
        _ = try await fixture.importAccount()
        fixture.refresher.failRevocations(with: RevocationError(reason: "ends every grant", isFinal: true))
        let outcome = try await relogin(fixture, refresh: "RT-2", access: "AT-2")
        #expect(outcome.replacedGrant == ReplacedGrantRevocation(confirmed: false, reason: "ends every grant"))
        #expect(fixture.persistence.saved?.accounts.first?.replacedGrants == nil)
    }

    /// Polls `condition` while the engine's own tasks run (no wall-clock wait: it yields).
    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<10_000 where !condition() { await Task.yield() }
        #expect(condition())
    }
}
