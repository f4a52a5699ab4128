import Foundation
import SesameCore
import SesameCoreTesting
import Synchronization
import Testing

/// Tokens for fewer scopes or another audience: exchanged for the account's own token, one
/// exchange per account and request however many ask, kept while good, never kept across a
/// change of the account's grant, and never touching its refresh token.
@Suite struct NarrowingTests {
    private let profile = TokenNarrowing(scopes: ["profile"])

    private func narrowedToken(_ fixture: EngineFixture, _ access: String, lifetime: Duration = .seconds(600))
        -> TokenSet
    {
        fixture.tokens(lifetime: lifetime, refresh: nil, access: access)
    }

    @Test func callersAskingAtOnceShareOneExchangeOfTheCurrentTokenAndItIsKept() async throws {
        let refresher = ScriptedRefresher(gated: true)
        let fixture = EngineFixture(refresher: refresher)
        let account = try await fixture.importAccount()
        refresher.answerExchange(.success(narrowedToken(fixture, "AT-profile")))
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask { try await fixture.engine.tokens(for: account.id, narrowedTo: profile).accessToken }
            }
            while refresher.exchanges.isEmpty { await Task.yield() }
            for _ in 0..<10 { await Task.yield() }
            refresher.open()
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens == ["AT-profile"])
        #expect(refresher.exchanges.count == 1)
        #expect(refresher.exchanges.first?.subject == "AT-1", "the account's own current token is exchanged")
        let again = try await fixture.engine.tokens(for: account.id, narrowedTo: TokenNarrowing(scopes: ["profile"]))
        #expect(again.accessToken == "AT-profile" && refresher.exchanges.count == 1, "kept while good")
        #expect(refresher.calls == 0, "no refresh: the grant is not touched")
        #expect(try await fixture.engine.heldTokens(for: account.id)?.refreshToken == "RT-1")
    }

    @Test func scopesAskedInAnyOrderAreOneRequest() {
        #expect(TokenNarrowing(scopes: ["b", "a", "b"]) == TokenNarrowing(scopes: ["a", "b"]))
        #expect(TokenNarrowing(scopes: ["a"]) != TokenNarrowing(scopes: ["a"], audience: "x"))
        #expect(TokenNarrowing().isEmpty && !TokenNarrowing(resource: "https://r.test/").isEmpty)
    }

    @Test func aNarrowedTokenAboutToExpireIsExchangedAgainFromARefreshedOne() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(100))
        fixture.refresher.answerExchange(.success(narrowedToken(fixture, "AT-profile-1", lifetime: .seconds(60))))
        _ = try await fixture.engine.tokens(for: account.id, narrowedTo: profile)
        fixture.clock.advance(by: .seconds(80))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), access: "AT-2")))
        fixture.refresher.answerExchange(.success(narrowedToken(fixture, "AT-profile-2")))
        let again = try await fixture.engine.tokens(for: account.id, narrowedTo: profile)
        #expect(again.accessToken == "AT-profile-2")
        #expect(fixture.refresher.calls == 1, "the account's own token was due, so it was refreshed first")
        #expect(fixture.refresher.exchanges.map(\.subject) == ["AT-1", "AT-2"])
    }

    @Test func anExchangeThatEndsAfterALogoutIsHandedToNoOneAndNotKept() async throws {
        let refresher = ScriptedRefresher(gated: true)
        let fixture = EngineFixture(refresher: refresher)
        let account = try await fixture.importAccount()
        refresher.answerExchange(.success(narrowedToken(fixture, "AT-profile")))
        let asking = Task { try await fixture.engine.tokens(for: account.id, narrowedTo: profile) }
        while refresher.exchanges.isEmpty { await Task.yield() }
        _ = try await fixture.engine.logout(account.id)
        refresher.open()
        await #expect(throws: SessionError.self) { try await asking.value }
        await #expect(throws: SessionError.needsLogin(account.id)) {
            try await fixture.engine.tokens(for: account.id, narrowedTo: profile)
        }
        #expect(await !fixture.engine.holdsNarrowedToken(account.id, for: profile))
    }

    @Test func aLogoutEndsTheNarrowedTokensHeld() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount()
        fixture.refresher.answerExchange(.success(narrowedToken(fixture, "AT-profile")))
        _ = try await fixture.engine.tokens(for: account.id, narrowedTo: profile)
        #expect(await fixture.engine.holdsNarrowedToken(account.id, for: profile))
        _ = try await fixture.engine.logout(account.id)
        #expect(await !fixture.engine.holdsNarrowedToken(account.id, for: profile))
    }

    @Test func aHeldNarrowedTokenIsHandedOutWhileTheAccountRefreshes() async throws {
        let refresher = ScriptedRefresher(gated: true)
        let fixture = EngineFixture(refresher: refresher)
        let account = try await fixture.importAccount()
        refresher.answerExchange(.success(narrowedToken(fixture, "AT-profile")))
        let first = Task { try await fixture.engine.tokens(for: account.id, narrowedTo: profile) }
        while refresher.exchanges.isEmpty { await Task.yield() }
        refresher.open()
        _ = try await first.value
        refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), access: "AT-2")))
        let refreshing = Task { try await fixture.engine.refresh(account.id) }
        while refresher.calls == 0 { await Task.yield() }
        #expect(try await fixture.engine.tokens(for: account.id, narrowedTo: profile).accessToken == "AT-profile")
        refresher.open()
        _ = try await refreshing.value
    }

    @Test func noExchangeStartsWhileTheAccountIsLoggedOutAndTheHeldOnesAreGivenToTheRevocation() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount()
        fixture.refresher.answerExchange(.success(narrowedToken(fixture, "AT-profile")))
        _ = try await fixture.engine.tokens(for: account.id, narrowedTo: profile)
        let engine = fixture.engine
        let other = TokenNarrowing(audience: "api")
        let seen = Mutex<(refused: Bool, revoked: [String])>((false, []))
        _ = try await engine.logout(account.id, waitingAtMost: .seconds(5)) { _ in
            let refused: Bool
            do {
                _ = try await engine.tokens(for: account.id, narrowedTo: other)
                refused = false
            } catch {
                refused = true
            }
            let held = await engine.narrowedTokens(of: account.id).map(\.accessToken)
            seen.withLock { $0 = (refused, held) }
            return RemoteRevocation(confirmed: true)
        }
        #expect(seen.withLock { $0.refused }, "no exchange during the logout")
        #expect(seen.withLock { $0.revoked } == ["AT-profile"])
        #expect(fixture.refresher.exchanges.count == 1)
    }

    @Test(arguments: [
        (
            NarrowingError.unsupported(reason: "no exchange"),
            SessionError.narrowingUnsupported(account: "", reason: "no exchange")
        ),
        (.refused(reason: "invalid_target"), .narrowingRefused(account: "", reason: "invalid_target")),
        (.failed(reason: "HTTP 503"), .refreshFailed(account: "", reason: "HTTP 503")),
    ])
    func failuresAreTheCallersNamedErrorsAndNothingIsKept(_ failure: NarrowingError, _ expected: SessionError)
        async throws
    {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount()
        fixture.refresher.answerExchange(.failure(failure))
        await #expect {
            try await fixture.engine.tokens(for: account.id, narrowedTo: profile)
        } throws: { error in
            error as? SessionError == Self.withAccount(expected, account.id)
        }
        #expect(await !fixture.engine.holdsNarrowedToken(account.id, for: profile))
    }

    private static func withAccount(_ error: SessionError, _ id: String) -> SessionError {
        switch error {
        case .narrowingUnsupported(_, let reason): .narrowingUnsupported(account: id, reason: reason)
        case .narrowingRefused(_, let reason): .narrowingRefused(account: id, reason: reason)
        case .refreshFailed(_, let reason): .refreshFailed(account: id, reason: reason)
        default: error
        }
    }
}
