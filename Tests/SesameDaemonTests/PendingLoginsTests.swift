import Foundation
import SesameCore
import SesameProtocol
import Testing

@testable import SesameDaemon
@testable import SesameProviders

/// A provider that is never asked anything: the tests here are about bookkeeping.
private struct SilentProvider: ProviderAdapter {
    let configuration = ProviderConfiguration(name: "naver", clientID: "c")
    func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization {
        throw .unsupported("test")
    }
    func finishDeviceLogin(_ authorization: DeviceAuthorization, polling: DevicePolling)
        async throws(ProviderError) -> ProviderLogin
    {
        throw .unsupported("test")
    }
    func startAuthorizationCodeLogin(redirectURI: String, scopes: [String]?) async throws(ProviderError)
        -> AuthorizationRequest
    { throw .unsupported("test") }
    func finishAuthorizationCodeLogin(_ request: AuthorizationRequest, code: String) async throws(ProviderError)
        -> ProviderLogin
    { throw .unsupported("test") }
    func redeemCode(_ handover: HandedOverCode) async throws(ProviderError) -> ProviderLogin {
        throw .unsupported("test")
    }
    func revoke(_ tokens: TokenSet) async throws(ProviderError) {}
    func verifyHandedOver(_ tokens: TokenSet, subject: String) async throws(ProviderError) {}
    func checkAccessToken(_ tokens: TokenSet, subject: String) async throws(ProviderError) -> AccessTokenCheck {
        .cannotCheck("test")
    }
    func checkConfiguration(pay: @escaping DevicePolling.Payment) async -> [ProviderCheck] { [] }
    func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet { tokens }
}

/// Authorization-code logins waiting for their redirect.
@Suite struct PendingLoginsTests {
    @Test func aStateIssuedToOneUserIsNeverAnotherUsersToRedeemEvenAfterItWasUsed() async {
        let logins = PendingLogins()
        let request = AuthorizationRequest(
            url: "https://id.example/authorize",
            state: "state-1",
            redirectURI: "http://127.0.0.1:8765/cb",
            codeVerifier: "",
            nonce: "",
            scopes: []
        )
        await logins.add(request, provider: "naver", adapter: SilentProvider(), owner: 1000)
        #expect(await logins.isAnotherUsersState("state-1", caller: 1001))
        #expect(await !logins.isAnotherUsersState("state-1", caller: 1000))
        #expect(await logins.take(state: "state-1", owner: 1001) == nil)
        #expect(await logins.take(state: "state-1", owner: 1000) != nil)
        #expect(await logins.isAnotherUsersState("state-1", caller: 1001))
        #expect(await !logins.isAnotherUsersState("never-issued", caller: 1001))
    }
}
