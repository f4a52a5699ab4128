import AsyncHTTPClient
import Foundation
import NIOHTTP1
import SesameCore
import SesameCoreTesting
import SesameProtocol
import Testing

@testable import SesameProviders

/// The OAuth client's requests and how it reads answers, at the token, device authorization
/// and revocation endpoints, over a scripted transport: what goes on the wire (RFC 6749,
/// RFC 7009, RFC 8628) and what each kind of answer means for the session.
@Suite struct OAuthExchangeTests {
    static let token = "https://idp.example/token"
    static let device = "https://idp.example/device"
    static let revocation = "https://idp.example/revoke"
    static let userinfo = "https://idp.example/userinfo"

    let transport = ScriptedTransport()
    let clock = TestClock()

    /// A generic provider with explicit endpoints and a secret that needs form-encoding.
    func provider(secret: String? = "s3cr:et/+") -> GenericOIDCProvider {
        let configuration = ProviderConfiguration(
            name: "example",
            discovery: false,
            endpoints: OAuthEndpoints(
                tokenEndpoint: Self.token,
                deviceAuthorizationEndpoint: Self.device,
                revocationEndpoint: Self.revocation,
                userinfoEndpoint: Self.userinfo
            ),
            clientID: "sesame client",
            clientSecret: secret
        )
        return GenericOIDCProvider(configuration: configuration, transport: transport, clock: clock)
    }

    let account = Account(
        id: "a1",
        provider: "example",
        ownerUID: 1000,
        subject: "alice",
        state: .active,
        createdAt: Date(timeIntervalSince1970: 1_700_000_000)
    )
    let tokens = TokenSet(accessToken: "ACCESS-1", refreshToken: "REFRESH-SECRET", scopes: ["openid"])

    @Test func aRefreshPostsTheRefreshGrantWithBasicCredentialsAndTimesTheNewToken() async throws {
        transport.on(Self.token, Reply.json(["access_token": "ACCESS-2", "token_type": "Bearer", "expires_in": 3600]))
        let fresh = try await provider().refresh(account, tokens: tokens)

        let request = try #require(transport.requests.first)
        #expect(transport.requests.count == 1 && request.method == .POST && request.url == Self.token)
        #expect(request.form == ["grant_type": "refresh_token", "refresh_token": "REFRESH-SECRET"])
        #expect(request.headers.first(name: "Content-Type") == "application/x-www-form-urlencoded")
        // RFC 6749 §2.3.1: id and secret are form-encoded before they are joined for Basic.
        let basic = try #require(request.basicCredentials)
        #expect(basic.user == "sesame%20client" && basic.password == "s3cr%3Aet%2F%2B")
        #expect(fresh.accessToken == "ACCESS-2")
        #expect(fresh.accessTokenExpiresAt == clock.now.addingTimeInterval(3600))
        // RFC 6749 §6: without a scope in the answer, the scopes are those already granted.
        #expect(fresh.scopes == ["openid"])
    }

    /// RFC 6749 appendix B: a value is encoded as its UTF-8 bytes, each outside RFC 3986's
    /// unreserved set escaped, so a letter outside ASCII is escaped too (a Korean client id, say).
    @Test func formEncodingEscapesEveryByteOutsideTheUnreservedSet() {
        #expect(OAuthHTTP.formEncode("Az09-._~") == "Az09-._~")
        #expect(OAuthHTTP.formEncode("a b+c/d:e&f=g") == "a%20b%2Bc%2Fd%3Ae%26f%3Dg")
        #expect(OAuthHTTP.formEncode("é세") == "%C3%A9%EC%84%B8")
    }

    @Test func aPublicClientNamesItselfInTheForm() async throws {
        transport.on(Self.token, Reply.json(["access_token": "ACCESS-2", "token_type": "Bearer"]))
        _ = try await provider(secret: nil).refresh(account, tokens: tokens)
        let request = try #require(transport.requests.first)
        // RFC 6749 §3.2.1: a public client sends client_id, and no Authorization header.
        #expect(request.form["client_id"] == "sesame client" && request.basicCredentials == nil)
    }

    @Test func aRefusedRefreshMeansLogInAgainAndNeverQuotesTheToken() async {
        transport.on(
            Self.token,
            Reply.json(.badRequest, ["error": "invalid_grant", "error_description": "REFRESH-SECRET was revoked"])
        )
        await #expect(throws: RefreshError.needsLogin(reason: "the provider refused the refresh (invalid_grant)")) {
            try await provider().refresh(account, tokens: tokens)
        }
    }

    /// A refresh carries only the refresh token, but the provider issued the access token too and
    /// may name it in its answer: neither reaches the reason a person and the log are given.
    @Test func aRefusedRefreshNeverQuotesTheAccessTokenItDidNotCarry() async throws {
        transport.on(Self.token, Reply.json(.badRequest, ["error": "revoked ACCESS-1 first"]))
        do throws(RefreshError) {
            _ = try await provider().refresh(account, tokens: tokens)
            Issue.record("the refused refresh was accepted")
        } catch {
            guard case .needsLogin(let reason) = error else { throw error }
            #expect(!reason.contains("ACCESS-1") && reason.contains(ProviderText.redaction))
        }
    }

    /// OpenID Connect Discovery 1.0 §4.2: an error in place of the discovery document refuses
    /// nothing the refresh asked for, so the session does not need a new login, and the
    /// provider's words, which may hold a token it issued, are not repeated (a fuzz finding).
    @Test func anErrorInPlaceOfTheDiscoveryDocumentIsNotARefusedRefresh() async {
        let configuration = ProviderConfiguration(
            name: "example",
            issuer: "https://idp.example",
            discovery: true,
            clientID: "sesame client",
            clientSecret: "s3cr:et/+"
        )
        transport.on(
            "https://idp.example/.well-known/openid-configuration",
            Reply.json(.unauthorized, ["error": "invalid_grant REFRESH-SECRET"])
        )
        let provider = GenericOIDCProvider(configuration: configuration, transport: transport, clock: clock)
        await #expect(throws: RefreshError.invalidResponse(reason: "the discovery document answered HTTP 401")) {
            try await provider.refresh(account, tokens: tokens)
        }
    }

    @Test func aProviderErrorIsQuotedWithTheSecretsOfTheRequestCutOut() async throws {
        transport.on(
            Self.token,
            Reply.json(.badRequest, ["error": "invalid_grant", "error_description": "code HANDED-CODE was used"])
        )
        let handover = HandedOverCode(code: "HANDED-CODE", redirectURI: nil, codeVerifier: "VERIFIER")
        do throws(ProviderError) {
            _ = try await provider().redeemCode(handover)
            Issue.record("the refused code was accepted")
        } catch {
            guard case .rejected("invalid_grant", let description?, _) = error else { throw error }
            #expect(!description.contains("HANDED-CODE") && description.contains(ProviderText.redaction))
        }
        #expect(transport.requests.first?.form["code_verifier"] == "VERIFIER")
    }

    @Test func aBusyProviderIsPassingTroubleWithTheWaitItAskedFor() async {
        transport.on(
            Self.token,
            Reply.text(.serviceUnavailable, "<html>down</html>", headers: ["Retry-After": "120"]),
            Reply.text(.tooManyRequests, "slow down")
        )
        await #expect(throws: RefreshError.transient(reason: "HTTP 503", retryAfter: .seconds(120))) {
            try await provider().refresh(account, tokens: tokens)
        }
        await #expect(throws: RefreshError.transient(reason: "HTTP 429", retryAfter: .seconds(30))) {
            try await provider().refresh(account, tokens: tokens)
        }
    }

    @Test(arguments: [
        (Reply.text(.ok, "<html>not json</html>"), "malformed JSON from the provider"),
        (Reply.text(.badRequest, "<html>bad</html>"), "HTTP 400 without an OAuth error"),
        (Reply.text(.found, ""), "unexpected HTTP 302"),
        (Reply.text(.ok, String(repeating: "x", count: (1 << 20) + 1)), "the response is larger than 1048576 bytes"),
        (Reply.json(["token_type": "Bearer"]), "malformed JSON from the provider"),
    ])
    func garbageIsAnInvalidAnswerNotALostSession(answer: @escaping ScriptedTransport.Answer, reason: String) async {
        transport.on(Self.token, answer)
        await #expect(throws: RefreshError.invalidResponse(reason: reason)) {
            try await provider().refresh(account, tokens: tokens)
        }
    }

    @Test func aTimeoutOrARefusedConnectionIsPassingTrouble() async {
        transport.on(
            Self.token,
            Reply.failure(HTTPClientError.readTimeout),
            Reply.failure(HTTPClientError.remoteConnectionClosed)
        )
        await #expect(throws: RefreshError.transient(reason: "timed out after 120 s", retryAfter: .seconds(5))) {
            try await provider().refresh(account, tokens: tokens)
        }
        await #expect(
            throws: RefreshError.transient(
                reason: "idp.example:443 closed the connection before it answered",
                retryAfter: .seconds(5)
            )
        ) {
            try await provider().refresh(account, tokens: tokens)
        }
    }

    @Test func refusedClientCredentialsAreAConfigurationProblemWhateverTheStatus() async throws {
        // RFC 6749 §5.2; Naver sends its errors with HTTP 200.
        transport.on(Self.token, Reply.json(.ok, ["error": "invalid_client"]))
        do throws(RefreshError) {
            _ = try await provider().refresh(account, tokens: tokens)
            Issue.record("invalid_client was taken as tokens")
        } catch {
            guard case .transient(let reason, let retryAfter) = error else { throw error }
            #expect(reason.contains("invalid_client") && retryAfter == .seconds(86400))
        }
    }

    @Test func revocationEndsTheRefreshTokenFirstThenTheAccessToken() async throws {
        transport.on(Self.revocation, Reply.text(.ok, ""))
        try await provider().revoke(tokens)
        // RFC 7009 §2.1: `token` with a `token_type_hint`; revoking the refresh token ends the grant.
        #expect(
            transport.requests(to: Self.revocation).map(\.form) == [
                ["token": "REFRESH-SECRET", "token_type_hint": "refresh_token"],
                ["token": "ACCESS-1", "token_type_hint": "access_token"],
            ]
        )
    }

    @Test func aRevocationTheProviderCannotTakeNowIsPassingTrouble() async {
        transport.on(Self.revocation, Reply.text(.serviceUnavailable, ""))
        await #expect(throws: ProviderError.transient(reason: "HTTP 503", retryAfter: .seconds(5))) {
            try await provider().revoke(tokens)
        }
    }
}
