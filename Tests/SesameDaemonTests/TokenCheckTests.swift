import Foundation
import SesameCore
import SesameProtocol
import Testing

@testable import SesameProviders

/// `Check`: the provider is asked about the current access token, and a token it rejects is
/// handled as a reported rejection (one refresh; a refused refresh leaves the account needing
/// a login). Its words never carry the provider's own text.
struct TokenCheckTests {
    private func check(_ fixture: HandlerFixture, _ id: String, as uid: UInt32 = 1000) async throws -> CheckReply {
        try await fixture.accounts(AccountsContract.check, AccountParameters(account: id), as: uid).reply(
            as: CheckReply.self
        )
    }

    @Test func anAcceptedTokenIsLeftAlone() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let reply = try await check(fixture, account.id)
        #expect(reply.verdict == .accepted && !reply.refreshed && reply.detail == nil)
        #expect(fixture.provider.refreshCount == 0)
    }

    @Test func aRejectedTokenIsRefreshedOnce() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        fixture.provider.script.withLock { $0.check = .success(.rejected("the provider refused the access token")) }
        let reply = try await check(fixture, account.id)
        #expect(reply.verdict == .rejected && reply.refreshed && reply.account.state == .active)
        #expect(fixture.provider.refreshCount == 1)
        let token = try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id))
        #expect(try token.reply(as: GetTokenReply.self).accessToken == "AT-2")
    }

    @Test func aRejectedTokenWhoseRefreshIsRefusedLeavesTheAccountNeedingALogin() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        fixture.provider.script.withLock {
            $0.check = .success(.rejected("the provider refused the access token"))
            $0.refresh = .failure(.needsLogin(reason: "revoked"))
        }
        let reply = try await check(fixture, account.id)
        #expect(reply.verdict == .rejected && !reply.refreshed && reply.account.state == .needsLogin)
    }

    @Test func aProviderThatCannotBeAskedIsUnknownInSesamesWords() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        fixture.provider.script.withLock {
            $0.check = .failure(.invalidResponse("quoted AT-alice back"))
        }
        let reply = try await check(fixture, account.id)
        #expect(reply.verdict == .unknown && !reply.refreshed && fixture.provider.refreshCount == 0)
        #expect(reply.detail?.contains("AT-alice") == false && reply.detail?.contains("quoted") == false)
    }

    @Test func anotherUsersAccountIsNoSuchAccount() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let outcome = try await fixture.accounts(
            AccountsContract.check,
            AccountParameters(account: account.id),
            as: 1001
        )
        #expect(outcome.errorName == "io.sesame.Accounts.NoSuchAccount")
    }
}
