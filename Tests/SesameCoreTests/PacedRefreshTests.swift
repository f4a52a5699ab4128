import Foundation
import SesameCore
import SesameCoreTesting
import Testing

/// A refresh the provider's own rules do not allow yet (`RefreshError.paced`) changes nothing
/// about the session: a token that is still valid is handed out, the planned refresh waits until
/// it is allowed, and subscribers hear of it as of a refresh that did not happen (`refreshFailed`
/// with the rule). A token that expires meanwhile is refused with the rule, not as "expired".
@Suite struct PacedRefreshTests {
    @Test func aPacedRefreshKeepsTheTokenAnnouncesTheHoldAndPlansForWhenItIsAllowed() async throws {
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
        fixture.clock.advance(by: .seconds(3601))
        await #expect(throws: SessionError.refreshFailed(account: account.id, reason: "once a day")) {
            try await fixture.engine.tokens(for: account.id)
        }
        #expect(refresher.calls == 1, "the hold keeps the provider unasked")
        _ = try await fixture.engine.logout(account.id)
        #expect(try await events.kinds(3) == [.loggedIn, .refreshFailed, .loggedOut])
    }
}
