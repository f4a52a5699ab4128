import Foundation
import SesameCore
import SesameCoreTesting
import Synchronization
import Testing

/// A caller's patience is not the refresh's lifetime, and a logout revokes what is current.
@Suite struct SlowRefreshTests {
    @Test func aCallerStopsWaitingButTheRefreshGoesOnAndIsKept() async throws {
        let fixture = EngineFixture(refresher: ScriptedRefresher(gated: true))
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.clock.advance(by: .seconds(11))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: "RT-2", access: "AT-2")))
        let caller = Task { try await fixture.engine.tokens(for: account.id, waitingAtMost: .seconds(5)) }
        while fixture.refresher.calls == 0 || fixture.clock.sleeperCount == 0 { await Task.yield() }
        fixture.clock.advance(by: .seconds(5))
        await #expect(throws: SessionError.self, "the token expired and the provider has not answered") {
            try await caller.value
        }
        fixture.refresher.open()
        #expect(try await events.kinds(2) == [.loggedIn, .tokenRefreshed], "the late answer is kept and announced")
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-2")
        #expect(fixture.persistence.saved?.accounts.first?.tokens?.refreshToken == "RT-2")
    }

    @Test func aCallerThatStopsWaitingGetsAStillValidToken() async throws {
        let fixture = EngineFixture(refresher: ScriptedRefresher(gated: true))
        let account = try await fixture.importAccount(lifetime: .seconds(20))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), access: "AT-2")))
        let caller = Task { try await fixture.engine.tokens(for: account.id, waitingAtMost: .seconds(5)) }
        while fixture.refresher.calls == 0 || fixture.clock.sleeperCount == 0 { await Task.yield() }
        fixture.clock.advance(by: .seconds(5))
        #expect(try await caller.value.accessToken == "AT-1")
        fixture.refresher.open()
    }

    /// A refresh in flight (ahead of expiry, or asked for by someone) holds only the callers
    /// whose token is due; the others get theirs at once, however slow the provider is.
    @Test func aCallerWhoseTokenIsNotDueDoesNotWaitForARefreshInFlight() async throws {
        let fixture = EngineFixture(refresher: ScriptedRefresher(gated: true))
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), access: "AT-2")))
        let refresh = Task { try await fixture.engine.refresh(account.id) }
        while fixture.refresher.calls == 0 { await Task.yield() }
        #expect(try fixture.engine.accountWithTokensWithoutWaiting(account.id).tokens?.accessToken == "AT-1")
        let answered = Mutex<String?>(nil)
        let caller = Task {
            let tokens = try await fixture.engine.tokens(for: account.id, waitingAtMost: .seconds(5))
            answered.withLock { $0 = tokens.accessToken }
        }
        #expect(await yieldUntil { answered.withLock { $0 } != nil }, "the caller waited for the provider")
        #expect(answered.withLock { $0 } == "AT-1")
        fixture.refresher.open()
        _ = try await refresh.value
        try await caller.value
    }

    @Test func aLogoutWaitsForTheRefreshInFlightAndRevokesItsTokens() async throws {
        let (fixture, _, refresh, logout, revoked) = try await logoutDuringARefresh(patience: .seconds(60))
        fixture.refresher.open()
        _ = try await refresh.value
        let (loggedOut, revocation) = try await logout.value
        #expect(revoked.tokens.map(\.refreshToken) == ["RT-2"], "the rotated refresh token, not the old one")
        #expect(revocation.confirmed && loggedOut.state == .loggedOut)
    }

    @Test func noRefreshStartsWhileALogoutRevokes() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: "RT-2", access: "AT-2")))
        let engine = fixture.engine
        let (_, revocation) = try await engine.logout(account.id, waitingAtMost: .seconds(60)) { _ in
            let during = try? await engine.tokens(for: account.id)
            return RemoteRevocation(confirmed: during?.accessToken == "AT-1")
        }
        #expect(revocation.confirmed, "GetToken during the revocation handed out the held token")
        #expect(fixture.refresher.calls == 0)
    }

    @Test func aRefreshThatOutlastsTheLogoutsPatienceIsAbandoned() async throws {
        let (fixture, account, refresh, logout, revoked) = try await logoutDuringARefresh(patience: .seconds(5))
        fixture.clock.advance(by: .seconds(5))
        let (loggedOut, revocation) = try await logout.value
        #expect(loggedOut.state == .loggedOut && revoked.tokens.map(\.refreshToken) == ["RT-1"])
        #expect(revocation.reason?.contains("abandoned") == true)
        fixture.refresher.open()
        _ = try? await refresh.value
        #expect(try await fixture.engine.account(account.id).state == .loggedOut, "the late refresh is void")
    }

    @Test func aLoginThatLandsDuringTheRevocationIsRevokedToo() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        let engine = fixture.engine
        let revoked = Revoked()
        let (_, revocation) = try await engine.logout(account.id, waitingAtMost: .seconds(60)) { tokens in
            if revoked.tokens.isEmpty {
                _ = try? await engine.importSession(
                    ImportedSession(
                        provider: "google",
                        subject: "alice",
                        owner: 1000,
                        tokens: fixture.tokens(lifetime: .seconds(3600), refresh: "RT-9", access: "AT-9")
                    )
                )
            }
            revoked.record(tokens)
            return RemoteRevocation(confirmed: true)
        }
        #expect(revoked.tokens.map(\.refreshToken) == ["RT-1", "RT-9"])
        #expect(revocation.confirmed)
    }
}

/// A refresh held at the provider (it will answer RT-2), and a logout of the same account
/// parked waiting for it at most `patience` on the test clock.
private func logoutDuringARefresh(patience: Duration) async throws -> (
    EngineFixture, Account, Task<TokenSet, any Error>,
    Task<(account: Account, revocation: RemoteRevocation), any Error>,
    Revoked
) {
    let fixture = EngineFixture(refresher: ScriptedRefresher(gated: true))
    let account = try await fixture.importAccount(lifetime: .seconds(10))
    fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), refresh: "RT-2", access: "AT-2")))
    let refresh = Task { try await fixture.engine.refresh(account.id) }
    while fixture.refresher.calls == 0 { await Task.yield() }
    let revoked = Revoked()
    let logout = Task {
        try await fixture.engine.logout(account.id, waitingAtMost: patience) { tokens in
            revoked.record(tokens)
            return RemoteRevocation(confirmed: true)
        }
    }
    await fixture.clock.untilSleeping()
    return (fixture, account, refresh, logout, revoked)
}

/// What a test's revocation closure was handed.
private final class Revoked: Sendable {
    private let state = Mutex<[TokenSet]>([])
    var tokens: [TokenSet] { state.withLock { $0 } }
    func record(_ tokens: TokenSet) { state.withLock { $0.append(tokens) } }
}
