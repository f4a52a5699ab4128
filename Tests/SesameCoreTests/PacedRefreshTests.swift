import Foundation
import SesameCore
import SesameCoreTesting
import Testing

/// A refresh the provider's own rules do not allow yet (`RefreshFailure.paced`) is not a
/// failure: nothing is announced, a token that is still valid is handed out, and the planned
/// refresh waits until it is allowed.
@Suite struct PacedRefreshTests {
    @Test func aPacedRefreshKeepsTheTokenAnnouncesNothingAndPlansForWhenItIsAllowed() async throws {
        let refresher = ScriptedRefresher()
        let fixture = EngineFixture(refresher: refresher, policy: SessionPolicy(refreshAhead: true))
        let events = await fixture.subscribe()
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        let until = fixture.clock.now.addingTimeInterval(86400)
        refresher.answer(.failure(.paced(until: until, reason: "once a day")))
        await #expect(throws: SessionError.refreshFailed(account: account.id, reason: "once a day")) {
            try await fixture.engine.refresh(account.id)
        }
        #expect(try await fixture.engine.tokens(for: account.id).accessToken == "AT-1")
        #expect(try await fixture.engine.account(account.id).state == .active)
        #expect(fixture.persistence.saved?.accounts.first?.refreshAt == until)
        // The only event is the login: a paced refresh is not a failed one.
        _ = try await fixture.engine.logout(account.id)
        #expect(try await events.kinds(2) == [.loggedIn, .loggedOut])
    }
}
