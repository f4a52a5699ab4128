import Foundation
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Testing

@testable import SesameDaemon
@testable import SesameProviders

/// io.sesame.Accounts, each method called in-process: its success and the errors it documents.
@Suite struct AccountsHandlerTests {
    private let error = { (name: String) in "io.sesame.Accounts.\(name)" }

    @Test func listShowsTheCallersAccountsOnly() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        #expect(
            try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts.map(\.id) == [
                account.id
            ]
        )
        #expect(try await fixture.accounts(AccountsContract.list, as: 1001).reply(as: ListReply.self).accounts.isEmpty)
    }

    /// One user's change, sealed and written to disk, must not hold up another's token.
    /// The held save blocks one thread of the cooperative pool, as a real write does; the
    /// readers need another (the pool has one per core).
    @Test func aTokenAndTheListAreAnsweredWhileAnotherUsersSaveIsInFlight() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let hold = fixture.store.holdNextSave()
        let stranger = Task { try await fixture.imported(subject: "mallory", as: 1001) }
        await hold.untilHeld()
        let token = try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id))
        let listed = try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts
        let get = try await fixture.accounts(AccountsContract.get, AccountParameters(account: account.id))
        #expect(hold.isHolding, "answered while the save was still in flight")
        hold.release()
        #expect(try token.reply(as: GetTokenReply.self).accessToken == "AT-alice")
        #expect(listed.map(\.id) == [account.id])
        #expect(get.errorName == nil)
        let mallory = try await stranger.value
        #expect(
            try await fixture.accounts(AccountsContract.list, as: 1001).reply(as: ListReply.self).accounts.map(\.id)
                == [mallory.id]
        )
    }

    @Test func getAnswersTheOwnerAndIsNoSuchAccountForAStranger() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let owned = try await fixture.accounts(AccountsContract.get, AccountParameters(account: account.id))
        #expect(try owned.reply(as: AccountReply.self).account.subject == "alice")
        let stranger = try await fixture.accounts(
            AccountsContract.get,
            AccountParameters(account: account.id),
            as: 1001
        )
        #expect(stranger.errorName == error("NoSuchAccount"))
    }

    @Test func importTokensNeedsAConfiguredProviderAndValidTokens() async throws {
        let fixture = HandlerFixture()
        let unknown = ImportTokensParameters(
            provider: "nosuch",
            subject: "a",
            displayName: nil,
            owner: nil,
            tokens: Tokens(accessToken: "AT")
        )
        #expect(try await fixture.accounts(AccountsContract.importTokens, unknown).errorName == error("NoSuchProvider"))
        let empty = ImportTokensParameters(
            provider: "scripted",
            subject: "a",
            displayName: nil,
            owner: nil,
            tokens: Tokens(accessToken: "")
        )
        #expect(try await fixture.accounts(AccountsContract.importTokens, empty).errorName == error("InvalidTokens"))
        var forOther = empty
        forOther.tokens = Tokens(accessToken: "AT")
        forOther.owner = 1001
        #expect(
            try await fixture.accounts(AccountsContract.importTokens, forOther).errorName
                == "org.varlink.service.PermissionDenied"
        )
    }

    @Test func aDeviceLoginStreamsTheCodeThenTheAccount() async throws {
        let fixture = HandlerFixture()
        let outcome = try await fixture.accounts(
            AccountsContract.login,
            LoginParameters(provider: "scripted", flow: .device, redirectUri: nil, scopes: nil),
            more: true
        )
        let first = try #require(outcome.streamed.first).decode(LoginReply.self)
        #expect(first.verification?.userCode == "WDJB-MJHT")
        #expect(try outcome.reply(as: LoginReply.self).account?.subject == "alice")
    }

    @Test(arguments: [
        (ProviderError.accessDenied, "LoginDenied"), (.expired, "LoginExpired"),
        (.transient(reason: "HTTP 503", retryAfter: .seconds(5)), "ProviderUnavailable"),
        (.rejected(error: "invalid_grant", description: nil), "ProviderFailed"),
    ])
    func aLoginThatFailsAtTheProviderIsNamed(failure: ProviderError, name: String) async throws {
        let fixture = HandlerFixture(provider: ScriptedProvider(script: .init(login: .failure(failure))))
        let outcome = try await fixture.accounts(
            AccountsContract.login,
            LoginParameters(provider: "scripted", flow: .device, redirectUri: nil, scopes: nil),
            more: true
        )
        #expect(outcome.errorName == error(name))
        #expect(try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts.isEmpty)
    }

    @Test func aFlowTheProviderLacksIsLoginUnsupportedAndAnUnknownProviderNoSuchProvider() async throws {
        let fixture = HandlerFixture(provider: ScriptedProvider(script: .init(flows: [.authorizationCode])))
        let device = LoginParameters(provider: "scripted", flow: .device, redirectUri: nil, scopes: nil)
        #expect(
            try await fixture.accounts(AccountsContract.login, device, more: true).errorName
                == error("LoginUnsupported")
        )
        let unknown = LoginParameters(provider: "nosuch", flow: nil, redirectUri: nil, scopes: nil)
        #expect(
            try await fixture.accounts(AccountsContract.login, unknown, more: true).errorName == error("NoSuchProvider")
        )
    }

    @Test func loginsBeyondTheUsersAllowanceAreTooManyLogins() async throws {
        let fixture = HandlerFixture(limits: UserLimits(logins: 1))
        #expect(try await fixture.accounts(AccountsContract.login, HandlerFixture.browserLogin).errorName == nil)
        #expect(
            try await fixture.accounts(AccountsContract.login, HandlerFixture.browserLogin).errorName
                == error("TooManyLogins")
        )
    }

    @Test func completeLoginFinishesTheCallersLoginOnceAndNoOneElses() async throws {
        let fixture = HandlerFixture()
        let state = try await fixture.startBrowserLogin()
        let complete = CompleteLoginParameters(state: state, code: "code")
        #expect(
            try await fixture.accounts(AccountsContract.completeLogin, complete, as: 1001).errorName
                == error("NoSuchLogin")
        )
        #expect(
            try await fixture.accounts(AccountsContract.completeLogin, complete).reply(as: AccountReply.self).account
                .subject == "alice"
        )
        #expect(try await fixture.accounts(AccountsContract.completeLogin, complete).errorName == error("NoSuchLogin"))
    }

    @Test func listProvidersNamesTheFlows() async throws {
        let fixture = HandlerFixture()
        let providers = try await fixture.accounts(AccountsContract.listProviders).reply(as: ListProvidersReply.self)
            .providers
        #expect(providers.map(\.name) == ["scripted"] && providers.first?.defaultFlow == .device)
    }

    @Test func redeemCodeMakesAnAccountAndRefusesAnotherUsersState() async throws {
        let fixture = HandlerFixture()
        let redeemed = try await fixture.accounts(
            AccountsContract.redeemCode,
            RedeemCodeParameters(provider: "scripted", code: "c")
        )
        #expect(try redeemed.reply(as: AccountReply.self).account.subject == "alice")
        let state = try await fixture.startBrowserLogin()
        let stolen = RedeemCodeParameters(provider: "scripted", code: "c", state: state)
        #expect(
            try await fixture.accounts(AccountsContract.redeemCode, stolen, as: 1001).errorName == error("NoSuchLogin")
        )
    }

    @Test func refreshStoresNewTokensAndAProviderRefusalIsNeedsLogin() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let refreshed = try await fixture.accounts(AccountsContract.refresh, AccountParameters(account: account.id))
        #expect(try refreshed.reply(as: AccountReply.self).account.state == .active)
        let token = try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id))
        #expect(try token.reply(as: GetTokenReply.self).accessToken == "AT-2")
        fixture.provider.script.withLock { $0.refresh = .failure(.needsLogin(reason: "revoked")) }
        let refused = try await fixture.accounts(AccountsContract.refresh, AccountParameters(account: account.id))
        #expect(refused.errorName == error("NeedsLogin"))
        #expect(
            try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id)).errorName
                == error("NeedsLogin")
        )
    }

    @Test func reportRejectedRefreshesOnlyTheCurrentToken() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let stale = ReportRejectedParameters(account: account.id, accessToken: "AT-old")
        #expect(
            try await fixture.accounts(AccountsContract.reportRejected, stale).reply(as: ReportRejectedReply.self)
                .refreshed == false
        )
        let current = ReportRejectedParameters(account: account.id, accessToken: "AT-alice")
        #expect(
            try await fixture.accounts(AccountsContract.reportRejected, current).reply(as: ReportRejectedReply.self)
                .refreshed
        )
    }

    @Test func logoutRevokesAtTheProviderAndASecondLogoutIsInvalidTransition() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let first = try await fixture.accounts(AccountsContract.logout, AccountParameters(account: account.id))
        let reply = try first.reply(as: LogoutReply.self)
        #expect(reply.revokedRemotely && reply.account.state == .loggedOut)
        #expect(fixture.provider.revoked.withLock { $0.count } == 1)
        let second = try await fixture.accounts(AccountsContract.logout, AccountParameters(account: account.id))
        #expect(second.errorName == error("InvalidTransition"))
    }

    @Test func removeDeletesTheAccountAndThenThereIsNone() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        #expect(
            try await fixture.accounts(AccountsContract.remove, AccountParameters(account: account.id)).errorName == nil
        )
        #expect(
            try await fixture.accounts(AccountsContract.remove, AccountParameters(account: account.id)).errorName
                == error("NoSuchAccount")
        )
    }

    @Test(
        arguments: [
            AccountsContract.get, AccountsContract.refresh, AccountsContract.getToken, AccountsContract.logout,
            AccountsContract.remove,
        ] as [any VarlinkMethodDescription]
    )
    func anotherUsersAccountIsNoSuchAccountForEveryMethodThatNamesOne(_ method: any VarlinkMethodDescription)
        async throws
    {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let outcome = try await fixture.accounts(method, AccountParameters(account: account.id), as: 1001)
        #expect(outcome.errorName == error("NoSuchAccount"))
        let rejected = ReportRejectedParameters(account: account.id, accessToken: "AT-alice")
        #expect(
            try await fixture.accounts(AccountsContract.reportRejected, rejected, as: 1001).errorName
                == error("NoSuchAccount")
        )
    }

    @Test func rootMayImportForAnotherOwnerAndTheOwnerThenSeesIt() async throws {
        let fixture = HandlerFixture()
        let parameters = ImportTokensParameters(
            provider: "scripted",
            subject: "bob",
            displayName: "Bob",
            owner: 1001,
            tokens: Tokens(accessToken: "AT-bob")
        )
        let account = try await fixture.accounts(AccountsContract.importTokens, parameters, as: 0).reply(
            as: AccountReply.self
        ).account
        #expect(account.ownerUID == 1001)
        let owned = try await fixture.accounts(AccountsContract.get, AccountParameters(account: account.id), as: 1001)
        #expect(owned.errorName == nil)
    }
}
