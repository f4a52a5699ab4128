import Foundation
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Testing

@testable import SesameDaemon
@testable import SesameProviders

/// io.sesame.Accounts' documented errors that depend on more than the parameters: rights a
/// grant gives, a store that refuses to save, a provider that went away or fails, and the
/// precise error of GetToken as a refresh fails.
@Suite struct AccountsErrorTests {
    private let error = { (name: String) in "io.sesame.Accounts.\(name)" }
    private static let permissionDenied = "org.varlink.service.PermissionDenied"
    private static let observeAndUse: AccountRights = [.observe, .use]

    /// A fixture whose provider answers every refresh with trouble that may pass.
    private static func providerDown() -> HandlerFixture {
        let down = RefreshError.transient(reason: "HTTP 503", retryAfter: .seconds(60))
        return HandlerFixture(provider: ScriptedProvider(script: .init(refresh: .failure(down))))
    }

    /// Parameters that name `account`, for any method that takes one.
    private func parameters(_ method: any VarlinkMethodDescription, _ account: String) -> any Encodable {
        method.name == AccountsContract.reportRejected.name
            ? ReportRejectedParameters(account: account, accessToken: "AT-alice") : AccountParameters(account: account)
    }

    @Test(
        arguments: [
            (AccountRights.observe, AccountsContract.getToken), (.observe, AccountsContract.reportRejected),
            (.observe, AccountsContract.logout), (.observe, AccountsContract.refresh),
            (.observe, AccountsContract.remove),
            (observeAndUse, AccountsContract.logout), (observeAndUse, AccountsContract.refresh),
            (observeAndUse, AccountsContract.remove), (AccountRights([.observe, .logout]), AccountsContract.remove),
        ] as [(AccountRights, any VarlinkMethodDescription)]
    )
    func aGrantAllowsWhatItNamesAndEverythingElseIsPermissionDenied(
        rights: AccountRights,
        method: any VarlinkMethodDescription
    ) async throws {
        let grant = Grant(principal: .user(1001), target: .provider("scripted"), rights: rights)
        let fixture = HandlerFixture(policy: AccessPolicy(grants: [grant]))
        let account = try await fixture.imported()
        #expect(
            try await fixture.accounts(AccountsContract.get, AccountParameters(account: account.id), as: 1001).errorName
                == nil
        )
        let outcome = try await fixture.accounts(method, parameters(method, account.id), as: 1001)
        #expect(outcome.errorName == Self.permissionDenied)
        #expect(try await fixture.engine.account(account.id).state == .active, "nothing changed")
    }

    @Test func aUseGrantGivesTheTokenAndReportRejected() async throws {
        let grant = Grant(principal: .user(1001), target: .provider("scripted"), rights: [.observe, .use])
        let fixture = HandlerFixture(policy: AccessPolicy(grants: [grant]))
        let account = try await fixture.imported()
        let token = try await fixture.accounts(
            AccountsContract.getToken,
            AccountParameters(account: account.id),
            as: 1001
        )
        #expect(try token.reply(as: GetTokenReply.self).accessToken == "AT-alice")
        let rejected = try await fixture.accounts(
            AccountsContract.reportRejected,
            parameters(AccountsContract.reportRejected, account.id),
            as: 1001
        )
        #expect(rejected.errorName == nil)
    }

    @Test(
        arguments: [
            AccountsContract.importTokens, AccountsContract.redeemCode, AccountsContract.logout,
            AccountsContract.remove,
        ] as [any VarlinkMethodDescription]
    )
    func aChangeTheStoreRefusesIsStoreFailedAndNotMade(_ method: any VarlinkMethodDescription) async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        let before = try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts
        fixture.store.failing = true
        let parameters: any Encodable =
            switch method.name {
            case AccountsContract.importTokens.name:
                ImportTokensParameters(
                    provider: "scripted",
                    subject: "bob",
                    displayName: nil,
                    owner: nil,
                    tokens: Tokens(accessToken: "AT-bob")
                )
            case AccountsContract.redeemCode.name: RedeemCodeParameters(provider: "scripted", code: "c")
            default: AccountParameters(account: account.id)
            }
        #expect(try await fixture.accounts(method, parameters).errorName == error("StoreFailed"))
        #expect(try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts == before)
    }

    @Test func aDeviceLoginTheStoreRefusesIsStoreFailedAfterTheCode() async throws {
        let fixture = HandlerFixture()
        fixture.store.failing = true
        let outcome = try await fixture.accounts(
            AccountsContract.login,
            LoginParameters(provider: "scripted", flow: .device, redirectUri: nil, scopes: nil),
            more: true
        )
        #expect(try #require(outcome.streamed.first).decode(LoginReply.self).verification != nil)
        #expect(outcome.errorName == error("StoreFailed"))
        #expect(try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts.isEmpty)
    }

    @Test func aRefreshTheStoreRefusesIsStoreFailedButItsTokensAreKept() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        fixture.store.failing = true
        #expect(
            try await fixture.accounts(AccountsContract.refresh, AccountParameters(account: account.id)).errorName
                == error("StoreFailed")
        )
        // The provider may have rotated the refresh token: the new tokens are the only copy.
        #expect(try await fixture.engine.heldTokens(for: account.id)?.refreshToken == "RT-2")
        fixture.store.failing = false
        #expect(
            try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id))
                .reply(as: GetTokenReply.self).accessToken == "AT-2"
        )
    }

    @Test func refreshingAnAccountWhoseProviderIsGoneIsNoSuchProvider() async throws {
        let fixture = HandlerFixture()
        let account = try await fixture.imported()
        _ = fixture.providers.reload([])
        let outcome = try await fixture.accounts(AccountsContract.refresh, AccountParameters(account: account.id))
        #expect(outcome.errorName == error("NoSuchProvider"))
        #expect(try await fixture.engine.account(account.id).state == .active)
    }

    @Test func aRefreshThatMayPassIsRefreshFailed() async throws {
        let fixture = Self.providerDown()
        let account = try await fixture.imported()
        let outcome = try await fixture.accounts(AccountsContract.refresh, AccountParameters(account: account.id))
        #expect(outcome.errorName == error("RefreshFailed"))
    }

    @Test func getTokenOfAnExpiredTokenIsRefreshFailedWhenTheRefreshFailsThenTokenExpiredWhileBackingOff() async throws
    {
        let fixture = Self.providerDown()
        let account = try await fixture.imported(expiresIn: 60)
        fixture.clock.advance(by: .seconds(120))
        let tried = try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id))
        #expect(tried.errorName == error("RefreshFailed"))
        // Backing off: callers are not each sent to a struggling provider.
        let backingOff = try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id))
        #expect(backingOff.errorName == error("TokenExpired"))
        #expect(fixture.provider.refreshCount == 1)
    }

    @Test func getTokenOfAStillValidTokenWhoseRefreshFailsIsThatToken() async throws {
        let fixture = Self.providerDown()
        let account = try await fixture.imported(expiresIn: 30)
        let outcome = try await fixture.accounts(AccountsContract.getToken, AccountParameters(account: account.id))
        #expect(try outcome.reply(as: GetTokenReply.self).accessToken == "AT-alice")
        #expect(fixture.provider.refreshCount == 1)
    }

    @Test(arguments: [
        (ProviderError.rejected(error: "invalid_grant", description: nil), "ProviderFailed"),
        (.transient(reason: "HTTP 503", retryAfter: .seconds(5)), "ProviderUnavailable"),
        (.accessDenied, "LoginDenied"),
    ])
    func aCodeTheProviderRefusesIsNamedForCompleteLoginAndRedeemCode(failure: ProviderError, name: String)
        async throws
    {
        let fixture = HandlerFixture(provider: ScriptedProvider(script: .init(login: .failure(failure))))
        let state = try await fixture.startBrowserLogin()
        let completed = try await fixture.accounts(
            AccountsContract.completeLogin,
            CompleteLoginParameters(state: state, code: "c")
        )
        #expect(completed.errorName == error(name))
        let redeemed = try await fixture.accounts(
            AccountsContract.redeemCode,
            RedeemCodeParameters(provider: "scripted", code: "c")
        )
        #expect(redeemed.errorName == error(name))
        let unknown = try await fixture.accounts(
            AccountsContract.redeemCode,
            RedeemCodeParameters(provider: "nosuch", code: "c")
        )
        #expect(unknown.errorName == error("NoSuchProvider"))
        #expect(try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts.isEmpty)
    }

    @Test func aLogoutTheProviderCannotConfirmStillEndsTheSessionAndSaysWhy() async throws {
        let fixture = HandlerFixture(
            provider: ScriptedProvider(
                script: .init(revoke: .failure(.transient(reason: "HTTP 503", retryAfter: .seconds(5))))
            )
        )
        let account = try await fixture.imported()
        let reply = try await fixture.accounts(AccountsContract.logout, AccountParameters(account: account.id))
            .reply(as: LogoutReply.self)
        #expect(reply.account.state == .loggedOut && !reply.revokedRemotely && reply.notRevokedReason != nil)
        #expect(try await fixture.engine.heldTokens(for: account.id) == nil)
    }
}

/// What one user may make the daemon keep: a bounded number of accounts, each field bounded.
@Suite struct AccountQuotaTests {
    private static func parameters(
        subject: String = "alice",
        _ change: (inout ImportTokensParameters) -> Void = { _ in }
    )
        -> ImportTokensParameters
    {
        var parameters = ImportTokensParameters(
            provider: "scripted",
            subject: subject,
            displayName: nil,
            owner: nil,
            tokens: Tokens(accessToken: "AT-\(subject)", refreshToken: "RT", expiresIn: 3600)
        )
        change(&parameters)
        return parameters
    }

    @Test func accountsBeyondTheUsersAllowanceAreTooManyAccountsButRenewalsAndOtherUsersAreNot() async throws {
        let fixture = HandlerFixture(limits: UserLimits(accounts: 2))
        for subject in ["a", "b"] { _ = try await fixture.imported(subject: subject) }
        let verified = fixture.provider.verificationCount
        let third = try await fixture.accounts(AccountsContract.importTokens, Self.parameters(subject: "c"))
        #expect(third.errorName == "io.sesame.Accounts.TooManyAccounts")
        #expect(fixture.provider.verificationCount == verified, "refused before the provider was asked")
        #expect(
            try await fixture.accounts(AccountsContract.importTokens, Self.parameters(subject: "a")).errorName == nil
        )
        #expect(
            try await fixture.accounts(AccountsContract.importTokens, Self.parameters(subject: "c"), as: 1001).errorName
                == nil
        )
        let login = try await fixture.accounts(
            AccountsContract.redeemCode,
            RedeemCodeParameters(provider: "scripted", code: "c")
        )
        #expect(login.errorName == "io.sesame.Accounts.TooManyAccounts")
        // The grant the renewal of "a" replaced is revoked, and so are the tokens the provider
        // issued for a login that cannot be kept.
        #expect(fixture.provider.revoked.withLock { $0.map(\.accessToken) } == ["AT-a", "AT-1"])
    }

    @Test(arguments: [
        "idToken", "tokenType", "scopes", "scope", "expiresIn", "refreshExpiresIn",
    ])
    func anOversizedFieldIsInvalidTokensAndNothingIsKept(field: String) async throws {
        let fixture = HandlerFixture()
        let oversized = Self.parameters { parameters in
            switch field {
            case "idToken": parameters.tokens.idToken = String(repeating: "i", count: 16385)
            case "tokenType": parameters.tokens.tokenType = String(repeating: "t", count: 65)
            case "scopes": parameters.tokens.scopes = (0...64).map { "s\($0)" }
            case "scope": parameters.tokens.scopes = [String(repeating: "s", count: 257)]
            case "expiresIn": parameters.tokens.expiresIn = .max
            default: parameters.tokens.refreshExpiresIn = 400 * 365 * 86400
            }
        }
        let outcome = try await fixture.accounts(AccountsContract.importTokens, oversized)
        #expect(outcome.errorName == "io.sesame.Accounts.InvalidTokens")
        #expect(try await fixture.accounts(AccountsContract.list).reply(as: ListReply.self).accounts.isEmpty)
    }

    @Test func aLongDisplayNameIsShortenedAndAnyNameStaysWithinItsBound() async throws {
        let fixture = HandlerFixture()
        let long = Self.parameters { $0.displayName = String(repeating: "\u{1F600}", count: 5000) }
        let account = try await fixture.accounts(AccountsContract.importTokens, long).reply(as: AccountReply.self)
            .account
        #expect(account.displayName?.unicodeScalars.count == 201)
        let controls = Self.parameters(subject: "b") { $0.displayName = String(repeating: "\u{7}", count: 5000) }
        let escaped = try await fixture.accounts(AccountsContract.importTokens, controls).reply(as: AccountReply.self)
            .account
        #expect((escaped.displayName?.utf8.count ?? 0) <= AccountFieldLimits.displayName)
    }
}
