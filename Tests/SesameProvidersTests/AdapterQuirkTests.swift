import Crypto
import Foundation
import JWTKit
import NIOHTTP1
import Testing

@testable import SesameProviders

/// The provider quirks that are decided without a server: Apple's client secret, Naver's
/// string numbers, Kakao's error codes, Apple's `user` field.
@Suite struct AdapterQuirkTests {
    private struct SecretClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    @Test func appleClientSecretIsAnES256JWTWithApplesClaimsAndIsReusedUntilNearItsEnd() async throws {
        let key = P256.Signing.PrivateKey()
        let settings = AppleProvider.Settings(teamID: "TEAM123", keyID: "KEY456", privateKey: key.pemRepresentation)
        let secret = AppleClientSecret(settings: settings, clientID: "com.example.app")
        let jwt = try await secret.value()
        let verifier = JWTKeyCollection()
        await verifier.add(ecdsa: try ES256PublicKey(pem: key.publicKey.pemRepresentation), kid: "KEY456")
        let claims = try await verifier.verify(jwt, as: SecretClaims.self)
        #expect(claims.iss.value == "TEAM123" && claims.sub.value == "com.example.app")
        #expect(claims.aud.value == ["https://appleid.apple.com"])
        let lifetime = claims.exp.value.timeIntervalSince(claims.iat.value)
        #expect(lifetime > 3600 && lifetime <= 15_777_000)
        let header = try #require(Data(base64URLEncoded: String(jwt.split(separator: ".")[0])))
        let fields = try JSONDecoder().decode([String: String].self, from: header)
        #expect(fields["kid"] == "KEY456" && fields["alg"] == "ES256")
        let payload = try #require(Data(base64URLEncoded: String(jwt.split(separator: ".")[1])))
        let times = try JSONDecoder().decode([String: Double].self, from: try Self.numbers(payload))
        #expect(times.values.allSatisfy { $0 == $0.rounded() })
        #expect(try await secret.value() == jwt)
    }

    /// The numeric claims of a JWT payload.
    private static func numbers(_ payload: Data) throws -> Data {
        let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any] ?? [:]
        return try JSONSerialization.data(withJSONObject: object.filter { $0.value is NSNumber })
    }

    @Test func anUnusableAppleKeyIsAConfigurationErrorNotAReLogin() async {
        let secret = AppleClientSecret(
            settings: AppleProvider.Settings(teamID: "T", keyID: "K", privateKey: "garbage"),
            clientID: "c"
        )
        await #expect(throws: ProviderError.self) { try await secret.value() }
        do {
            _ = try await secret.value()
        } catch {
            guard case .misconfigured = error else { Issue.record("\(error)"); return }
        }
    }

    @Test func applesUserFieldGivesTheNameAndIsBounded() {
        let user = #"{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"ada@privaterelay.appleid.com"}"#
        #expect(AppleProvider.name(fromUser: user) == "Ada Lovelace")
        #expect(AppleProvider.name(fromUser: #"{"email":"a@b.example"}"#) == "a@b.example")
        #expect(AppleProvider.name(fromUser: "not json") == nil)
        #expect(AppleProvider.name(fromUser: String(repeating: " ", count: 5000) + user) == nil)
    }

    /// One reader of token responses for the token endpoint and `sesamectl import`: Naver's
    /// lifetimes as strings, Keycloak's name for the refresh token's, and no token_type.
    @Test func naversNumbersMayBeStrings() throws {
        func read(_ json: String) throws -> TokenResponse {
            try JSONDecoder().decode(TokenResponse.self, from: Data(json.utf8))
        }
        let naver = try read(#"{"access_token":"a","token_type":"bearer","expires_in":"3600"}"#)
        #expect(naver.expiresIn == 3600 && naver.tokenType == "bearer")
        let keycloak = try read(#"{"access_token":"a","expires_in":300,"refresh_expires_in":"1800"}"#)
        #expect(keycloak.expiresIn == 300 && keycloak.keycloakRefreshExpiresIn == 1800 && keycloak.tokenType == nil)
        #expect(keycloak.refreshTokenExpiresIn == nil, "Keycloak's session limit is not the refresh token's end")
        let offline = try read(#"{"access_token":"a","refresh_token_expires_in":0,"refresh_expires_in":0}"#)
        #expect(offline.refreshTokenExpiresIn == nil && offline.keycloakRefreshExpiresIn == nil)
        #expect(keycloak.tokenSet(now: Date(timeIntervalSince1970: 0), requestedScopes: []).tokenType == "Bearer")
        #expect(throws: DecodingError.self) { try read(#"{"access_token":"a","expires_in":"soon"}"#) }
        #expect(throws: DecodingError.self) { try read(#"{"expires_in":3600}"#) }
    }

    @Test func kakaosErrorCodeIsKeptAndTheTokenItQuotesIsNot() throws {
        let body = #"{"error":"invalid_grant","error_description":"token rt-1 expired","error_code":"KOE322"}"#
        let response = OAuthHTTP.Response(status: .badRequest, headers: [:], body: Data(body.utf8), secrets: ["rt-1"])
        let error = OAuthHTTP.error(try JSONDecoder().decode(OAuthErrorBody.self, from: response.body), of: response)
        guard case .rejected(let oauthError, let description, let code) = error else {
            Issue.record("\(error)")
            return
        }
        #expect(oauthError == "invalid_grant" && code == "KOE322")
        #expect(description?.contains("rt-1") == false)
        // The code, not the free text, reaches the session's reason, which events carry.
        guard case .needsLogin(let reason) = error.refreshFailure else {
            Issue.record("\(error.refreshFailure)")
            return
        }
        #expect(reason.contains("KOE322") && !reason.contains("expired"))
    }
}
