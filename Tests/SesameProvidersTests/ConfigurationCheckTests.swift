import NIOCore
import NIOHTTP1
import SesameCoreTesting
import Synchronization
import Testing

@testable import SesameProviders

#if canImport(Glibc)
    import Glibc
#endif

/// A provider file checked against its provider over a scripted transport: which answer of the
/// token endpoint means the client is known (RFC 6749 §5.2), which key each failure names, and
/// that nothing after a failed discovery is asked.
@Suite struct ConfigurationCheckTests {
    static let issuer = "https://idp.example"
    static let document = "https://idp.example/.well-known/openid-configuration"
    static let token = "https://idp.example/token"
    static let keys = "https://idp.example/jwks"

    let transport = ScriptedTransport()

    func provider(discovery: Bool = true, endpoints: OAuthEndpoints = OAuthEndpoints()) -> GenericOIDCProvider {
        let configuration = ProviderConfiguration(
            name: "example",
            issuer: Self.issuer,
            discovery: discovery,
            endpoints: endpoints,
            clientID: "sesame",
            flow: .device
        )
        return GenericOIDCProvider(configuration: configuration, transport: transport, clock: TestClock())
    }

    func discovered(_ extra: [String: any Sendable] = [:]) {
        var document: [String: any Sendable] = ["issuer": Self.issuer, "token_endpoint": Self.token]
        document.merge(extra) { $1 }
        transport.on(Self.document, Reply.json(document))
    }

    @Test func aRefusedMadeUpRefreshTokenShowsTheClientIsKnown() async throws {
        discovered(["jwks_uri": Self.keys, "device_authorization_endpoint": "https://idp.example/device"])
        transport.on(Self.keys, Reply.json(["keys": [["kty": "RSA"], ["kty": "EC"]]]))
        transport.on(Self.token, Reply.json(.badRequest, ["error": "invalid_grant"]))
        transport.on("https://idp.example/device", Reply.text(.methodNotAllowed, ""))
        let checks = await provider().checkConfiguration(pay: { nil })
        #expect(checks.allSatisfy { $0.problem == nil })
        #expect(
            checks.map(\.subject) == [
                "discovery document", "signing keys", "token endpoint", "client_id", "device authorization endpoint",
            ]
        )
        #expect(checks[1].finding == "2 keys" && checks[3].finding == "the provider knows the client")
        let probe = try #require(transport.requests(to: Self.token).first)
        #expect(probe.form["grant_type"] == "refresh_token" && probe.form["client_id"] == "sesame")
    }

    @Test func anUnknownClientIsNamedByItsKey() async {
        discovered()
        transport.on(Self.token, Reply.json(.unauthorized, ["error": "invalid_client"]))
        let failed = await provider().checkConfiguration(pay: { nil }).filter { $0.problem != nil }
        #expect(failed.map(\.key) == ["client_id", "endpoints.device_authorization"])
        #expect(failed.first?.problem?.contains(#"client "sesame""#) == true)
    }

    @Test func aClientWithoutRefreshTokensIsToldApartFromAnUnknownOne() async {
        discovered()
        transport.on(Self.token, Reply.json(.badRequest, ["error": "unauthorized_client"]))
        let client = await provider().checkConfiguration(pay: { nil }).first { $0.subject == "client_id" }
        #expect(client?.problem?.contains("allows it no refresh tokens (unauthorized_client)") == true)
    }

    @Test func aFailedDiscoveryEndsTheCheckNamingTheIssuer() async {
        transport.on(Self.document, Reply.failure(IOError(errnoCode: ECONNREFUSED, reason: "connect")))
        let checks = await provider().checkConfiguration(pay: { nil })
        #expect(checks.count == 1 && checks[0].key == "issuer")
        #expect(checks[0].problem == "connection refused by idp.example:443")
        #expect(transport.requests.count == 1)
    }

    @Test func aTokenEndpointWithoutAnOAuthErrorIsDoubted() async {
        let endpoints = OAuthEndpoints(tokenEndpoint: Self.token, deviceAuthorizationEndpoint: "https://idp.example/d")
        transport.on(Self.token, Reply.text(.notFound, "<html>not here</html>"))
        transport.on("https://idp.example/d", Reply.text(.methodNotAllowed, ""))
        let checks = await provider(discovery: false, endpoints: endpoints).checkConfiguration(pay: { nil })
        let token = checks.first { $0.subject == "token endpoint" }
        #expect(token?.key == "endpoints.token" && token?.problem?.contains("HTTP 404 and no OAuth error") == true)
        #expect(!checks.contains { $0.problem?.contains("not here") == true })
    }

    @Test func eachRequestIsPaidForAndTheChecksEndWhereThePaymentIsRefused() async {
        discovered(["jwks_uri": Self.keys])
        transport.on(Self.keys, Reply.json(["keys": [["kty": "RSA"]]]))
        let allowance = Mutex(2)
        let checks = await provider().checkConfiguration {
            allowance.withLock { left in
                left -= 1
                return left >= 0 ? nil : .seconds(42)
            }
        }
        #expect(checks.map(\.subject) == ["discovery document", "signing keys", "remaining checks"])
        #expect(checks.last?.problem?.hasSuffix("at sesamed's limit; try again in 42 s") == true)
        #expect(checks.last?.key == nil && transport.requests(to: Self.token).isEmpty)
    }

    @Test func aKeySetWithoutKeysFails() async {
        discovered(["jwks_uri": Self.keys])
        transport.on(Self.keys, Reply.json(["keys": [] as [String]]))
        transport.on(Self.token, Reply.json(.badRequest, ["error": "invalid_grant"]))
        let keys = await provider().checkConfiguration(pay: { nil }).first { $0.subject == "signing keys" }
        #expect(keys?.problem == "the answer is not a JSON Web Key Set with keys" && keys?.key == "issuer")
    }
}
