import Foundation
import SesameCore
import Testing

@testable import SesameProviders

/// Tokens an app hands over without an ID token are checked at the provider's userinfo
/// endpoint: a token of one person is not filed under another's subject.
extension OAuthExchangeTests {
    @Test func handedOverTokensWithoutAnIDTokenAreCheckedAtTheUserinfoEndpoint() async throws {
        transport.on(Self.userinfo, Reply.json(["sub": "alice"]), Reply.json(["sub": "alice"]))
        let handedOver = TokenSet(accessToken: "ACCESS-OF-ALICE", refreshToken: nil, scopes: [])
        try await provider().verifyHandedOver(handedOver, subject: "alice")
        await #expect(
            throws: ProviderError.invalidResponse("the access token belongs to another subject than the one given")
        ) {
            try await provider().verifyHandedOver(handedOver, subject: "bob")
        }
    }
}
