import Foundation
import NIOHTTP1
import SesameCore
import SesameCoreTesting
import Testing

@testable import SesameProviders

/// OAuth 2.0 Token Exchange (RFC 8693) as the generic provider does it, over a scripted
/// transport: asked only of an issuer whose discovery lists the grant, with the account's access
/// token and never its refresh token, and an answer taken only when it is the token asked for.
@Suite struct TokenExchangeTests {
    static let issuer = "https://idp.example"
    static let token = "https://idp.example/token"
    static let grant = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    let transport = ScriptedTransport()
    let clock = TestClock()
    let account = Account(
        id: "a1",
        provider: "example",
        ownerUID: 1000,
        subject: "alice",
        state: .active,
        createdAt: Date(timeIntervalSince1970: 1_700_000_000)
    )

    /// A generic provider that discovers its endpoints; its discovery lists `grants`.
    func provider(grants: [String]? = [Self.grant]) -> GenericOIDCProvider {
        var document: [String: any Sendable] = ["issuer": Self.issuer, "token_endpoint": Self.token]
        if let grants { document["grant_types_supported"] = grants }
        transport.on(Self.issuer + "/.well-known/openid-configuration", Reply.json(document))
        let configuration = ProviderConfiguration(name: "example", issuer: Self.issuer, clientID: "sesame")
        return GenericOIDCProvider(configuration: configuration, transport: transport, clock: clock)
    }

    @Test func anExchangePostsTheAccessTokenAndWhatIsAskedAndReadsTheAnswer() async throws {
        let provider = provider()
        transport.on(
            Self.token,
            Reply.json([
                "access_token": "NARROW", "issued_token_type": Self.accessTokenType, "token_type": "Bearer",
                "expires_in": 300, "scope": "profile",
            ])
        )
        let asked = TokenNarrowing(scopes: ["profile"], audience: "api", resource: "https://api.example/")
        let narrowed = try await provider.exchange(account, accessToken: "ACCESS-1", for: asked)
        let request = try #require(transport.requests.last)
        #expect(
            request.form == [
                "client_id": "sesame", "grant_type": Self.grant, "subject_token": "ACCESS-1",
                "subject_token_type": Self.accessTokenType, "requested_token_type": Self.accessTokenType,
                "scope": "profile", "audience": "api", "resource": "https://api.example/",
            ]
        )
        #expect(narrowed.accessToken == "NARROW" && narrowed.refreshToken == nil && narrowed.scopes == ["profile"])
        #expect(narrowed.accessTokenExpiresAt == clock.now.addingTimeInterval(300))
    }

    @Test(arguments: [nil, ["authorization_code", "refresh_token"]] as [[String]?])
    func anIssuerWhoseDiscoveryListsNoExchangeIsNeverAsked(_ grants: [String]?) async {
        let provider = provider(grants: grants)
        await #expect {
            try await provider.exchange(account, accessToken: "ACCESS-1", for: TokenNarrowing(audience: "api"))
        } throws: { error in
            guard case .unsupported(let reason) = error as? NarrowingError else { return false }
            return reason.contains("token exchange")
        }
        #expect(!transport.requests.contains { $0.url == Self.token })
    }

    @Test(arguments: [
        ("invalid_target", "refused"), ("invalid_scope", "refused"), ("unsupported_grant_type", "unsupported"),
        ("unauthorized_client", "unsupported"),
        ("invalid_request", "failed"),
    ])
    func theProvidersRefusalsAreNamedByWhatTheyMean(_ error: String, _ kind: String) async {
        let provider = provider()
        transport.on(Self.token, Reply.json(.badRequest, ["error": error, "error_description": "ACCESS-1 is bad"]))
        await #expect {
            try await provider.exchange(account, accessToken: "ACCESS-1", for: TokenNarrowing(audience: "api"))
        } throws: { thrown in
            let said = "\(thrown)"
            guard !said.contains("ACCESS-1"), let failure = thrown as? NarrowingError else { return false }
            switch failure {
            case .refused: return kind == "refused"
            case .unsupported: return kind == "unsupported"
            case .failed: return kind == "failed"
            }
        }
    }

    @Test(
        arguments: [
            [
                "access_token": "N", "issued_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "token_type": "N_A",
            ],
            ["access_token": "N", "token_type": "Bearer"],
            [
                "access_token": "N", "issued_token_type": accessTokenType, "token_type": "Bearer",
                "scope": "profile admin",
            ],
        ] as [[String: String]]
    )
    func anAnswerThatIsNotTheTokenAskedForIsRefused(_ answer: [String: String]) async {
        let provider = provider()
        transport.on(Self.token, Reply.json(answer))
        await #expect {
            try await provider.exchange(account, accessToken: "ACCESS-1", for: TokenNarrowing(scopes: ["profile"]))
        } throws: { error in
            guard case .failed(let reason) = error as? NarrowingError else { return false }
            return reason.contains("not acceptable")
        }
    }

    @Test func kakaoHasNoTokenExchange() async {
        let configuration = ProviderConfiguration(
            name: "kakao",
            kind: .kakao(KakaoProvider.Settings()),
            discovery: false,
            clientID: "sesame"
        )
        let kakao = ProviderFactory.adapter(for: configuration, transport: transport)
        var account = account
        account.provider = "kakao"
        await #expect(throws: NarrowingError.unsupported(reason: "kakao offers no token exchange (RFC 8693)")) {
            try await kakao.exchange(account, accessToken: "ACCESS-1", for: TokenNarrowing(scopes: ["profile"]))
        }
        #expect(transport.requests.isEmpty)
    }
}
