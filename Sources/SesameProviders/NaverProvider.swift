import FoundationEssentials
import SesameCore
import SesameProtocol

/// Naver Login (developers.naver.com, "네이버 로그인 API 명세"): authorization code with `state`,
/// one token endpoint for issuing, refreshing (no rotation) and deleting tokens, answers whose
/// `expires_in` is a string and whose errors come with HTTP 200. Who logged in comes from the
/// profile API. When the provider file configures OpenID Connect (`issuer` and `endpoints.jwks`)
/// or an RFC 7009 revocation endpoint, those are used instead.
public final class NaverProvider: OIDCBasedAdapter {
    /// What only a Naver provider file configures.
    public struct Settings: Sendable, Hashable {
        /// "회원 프로필 조회 API" (`/v1/nid/me`).
        public var profileEndpoint: String

        /// Naver's documented profile URL.
        public init(profileEndpoint: String = "https://openapi.naver.com/v1/nid/me") {
            self.profileEndpoint = profileEndpoint
        }
    }

    /// Naver's documented OAuth endpoints.
    public static let endpoints = OAuthEndpoints(
        tokenEndpoint: "https://nid.naver.com/oauth2.0/token",
        authorizationEndpoint: "https://nid.naver.com/oauth2.0/authorize"
    )

    let base: GenericOIDCProvider
    let settings: Settings
    /// Naver Login has the authorization code flow only.
    public var loginFlows: [ProviderConfiguration.Flow] { Self.supportedFlows }
    /// The flows this provider offers, known before any adapter exists (to check provider files).
    public static let supportedFlows: [ProviderConfiguration.Flow] = [.authorizationCode]

    /// Creates the adapter, sending over `transport` (which must outlive it) and reading time from `clock`.
    public init(
        configuration: ProviderConfiguration,
        settings: Settings,
        transport: any HTTPTransport,
        clock: any SessionClock = SystemSessionClock()
    ) {
        self.settings = settings
        let http = OAuthHTTP(transport: transport, configuration: configuration, clock: clock)
        let profileEndpoint = settings.profileEndpoint
        base = GenericOIDCProvider(
            configuration: configuration,
            http: http,
            credentials: .configured(configuration, placement: .body),
            profile: { accessToken async throws(ProviderError) in
                try await Self.profile(profileEndpoint, accessToken: accessToken, http: http)
            },
            revoker: { base, tokens async throws(ProviderError) in try await Self.delete(tokens, base: base) }
        )
    }

    /// "네이버 로그인 인증 요청": response_type, client_id, redirect_uri and a required state.
    /// Naver documents no PKCE, so none is sent; the client secret and the single-use state
    /// protect the exchange.
    public func startAuthorizationCodeLogin(redirectURI: String, scopes: [String]?) async throws(ProviderError)
        -> AuthorizationRequest
    {
        let endpoint = try await base.endpoint(.authorizationEndpoint, for: "a browser login")
        let scopes = scopes ?? configuration.scopes
        return try base.authorizationRequest(
            endpoint,
            redirectURI: redirectURI,
            scopes: scopes,
            pkce: false,
            nonce: scopes.contains("openid")
        )
    }

    /// "접근 토큰 발급 요청": the code and the same state again.
    public func finishAuthorizationCodeLogin(_ request: AuthorizationRequest, code: String) async throws(ProviderError)
        -> ProviderLogin
    {
        // Naver issued the code: what it says anywhere in this exchange may repeat it.
        try await OAuthHTTP.redacting([code]) { () async throws(ProviderError) in
            let body = try await Self.tokenRequest(
                [("grant_type", "authorization_code"), ("code", code), ("state", request.state)],
                base: base
            )
            return try await base.login(
                body,
                scopes: request.scopes,
                nonce: request.nonce.isEmpty ? nil : request.nonce
            )
        }
    }

    /// Redeems a handed-over code; Naver's token request requires the authorization's state.
    public func redeemCode(_ handover: HandedOverCode) async throws(ProviderError) -> ProviderLogin {
        guard let state = handover.state else {
            throw .unsupported("redeeming a code without its state: Naver's token request requires it")
        }
        return try await OAuthHTTP.redacting([handover.code]) { () async throws(ProviderError) in
            let body = try await Self.tokenRequest(
                [("grant_type", "authorization_code"), ("code", handover.code), ("state", state)],
                base: base
            )
            return try await base.login(body, scopes: configuration.scopes, nonce: nil)
        }
    }

    /// "접근 토큰 갱신 요청": a new access token; the refresh token stays the same.
    public func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        guard let refreshToken = tokens.refreshToken else { throw .unavailable }
        let body: TokenResponse
        do throws(ProviderError) {
            body = try await Self.refreshGrant(refreshToken, of: tokens, base: base)
        } catch {
            throw error.refreshFailure
        }
        return try await base.refreshed(body, account: account, tokens: tokens)
    }

    /// An ID token is checked like any; without one, the profile API must name `subject`.
    public func verifyHandedOver(_ tokens: TokenSet, subject: String) async throws(ProviderError) {
        if let idToken = tokens.idToken {
            return try await base.verifyHandedOver(idToken: idToken, subject: subject)
        }
        let identity = try await Self.profile(
            settings.profileEndpoint,
            accessToken: tokens.accessToken,
            http: base.http
        )
        guard identity.subject == subject else {
            throw .invalidResponse("the access token belongs to another Naver user")
        }
    }

    /// The deletion (`grant_type=delete`) ends the app's link to the person's Naver account,
    /// and with it every token of theirs.
    public var revocationEndsEveryGrant: Bool { true }

    /// "접근 토큰 삭제 요청": `grant_type=delete` with a valid access token (an expired one is
    /// refreshed first). Naver answers success even for tokens it does not know, so its answer
    /// proves nothing: the deletion counts as confirmed only once the refresh token it should
    /// have ended is refused. A configured RFC 7009 endpoint is used instead.
    public func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        try await OAuthHTTP.redacting(tokens.secrets) { () async throws(ProviderError) in
            try await Self.delete(tokens, base: base)
        }
    }

    /// Deletes the grant with `grant_type=delete` and checks that it ended, or uses a configured
    /// RFC 7009 endpoint.
    static func delete(_ tokens: TokenSet, base: GenericOIDCProvider) async throws(ProviderError) {
        if base.configuration.endpoints.revocationEndpoint != nil { return try await base.revoke(tokens) }
        var accessToken = tokens.accessToken
        if let expiry = tokens.accessTokenExpiresAt, expiry <= base.http.clock.now,
            let refreshToken = tokens.refreshToken
        {
            accessToken = try await refreshGrant(refreshToken, of: tokens, base: base).accessToken
        }
        try await deleteRequest(accessToken: accessToken, base: base)
        guard let refreshToken = tokens.refreshToken else { return }
        // A refresh that still works means the grant lives on: the token it returns is deleted in
        // turn (a second access token of the grant would otherwise outlive the logout), and the
        // grant is checked once more.
        for attempt in 1...2 {
            let stillAlive: String
            do {
                stillAlive = try await refreshGrant(refreshToken, of: tokens, base: base).accessToken
            } catch .rejected(error: "invalid_grant", _, _), .rejected(error: "invalid_request", _, _) {
                // The refresh token no longer works: the grant is gone. Naver refuses a dead
                // refresh token with invalid_request (its documented error for every bad
                // request), as the refresh path reads it; the client's own credentials, the
                // other cause of invalid_request, were just accepted by the deletion.
                return
            } catch .rejected(let error, _, _) {
                // Another refusal (the client's own credentials, say) says nothing of the grant.
                throw .invalidResponse("Naver's answer to the check after the deletion (\(error)) does not confirm it")
            }
            try await deleteRequest(accessToken: stillAlive, base: base)
            if attempt == 2 {
                throw .invalidResponse("Naver answered success to the deletion, but the grant still works")
            }
        }
    }

    /// One `grant_type=delete` request; Naver's "success" means only that it took the request.
    private static func deleteRequest(accessToken: String, base: GenericOIDCProvider) async throws(ProviderError) {
        let response = try await base.post(
            try await base.tokenEndpoint(),
            [("grant_type", "delete"), ("access_token", accessToken), ("service_provider", "NAVER")]
        )
        let answer = try OAuthHTTP.classify(response, as: NaverTokenAnswer.self)
        if let error = answer.error { throw OAuthHTTP.error(error, of: response) }
        guard answer.result == "success" else { throw .invalidResponse("Naver did not confirm the deletion") }
    }

    /// The refresh grant through Naver's own token request (`GenericOIDCProvider.refreshGrant`).
    private static func refreshGrant(_ refreshToken: String, of tokens: TokenSet, base: GenericOIDCProvider)
        async throws(ProviderError) -> TokenResponse
    {
        try await GenericOIDCProvider.refreshGrant(refreshToken, of: tokens) { fields async throws(ProviderError) in
            try await tokenRequest(fields, base: base)
        }
    }

    /// A token-endpoint request, and its answer read Naver's way: errors under HTTP 200, and
    /// `expires_in` as a string.
    private static func tokenRequest(_ fields: [(String, String)], base: GenericOIDCProvider)
        async throws(ProviderError) -> TokenResponse
    {
        let response = try await base.post(
            try await base.tokenEndpoint(),
            fields,
            timeout: base.configuration.tokenRequestTimeout
        )
        let answer = try OAuthHTTP.classify(response, as: NaverTokenAnswer.self)
        if let error = answer.error { throw OAuthHTTP.error(error, of: response) }
        guard let accessToken = answer.accessToken, !accessToken.isEmpty else {
            throw .invalidResponse("Naver's token answer carries no access_token")
        }
        return TokenResponse(
            accessToken: accessToken,
            tokenType: answer.tokenType ?? "Bearer",
            expiresIn: answer.expiresIn?.value,
            refreshToken: answer.refreshToken,
            refreshTokenExpiresIn: nil,
            idToken: answer.idToken,
            scope: nil
        )
    }

    /// Who the access token belongs to: "회원 프로필 조회 API" answers `response.id`, Naver's
    /// stable id of the person for this app, with `resultcode` "00".
    static func profile(_ endpoint: String, accessToken: String, http: OAuthHTTP) async throws(ProviderError)
        -> ProviderIdentity
    {
        let response = try await http.get(endpoint, bearer: accessToken)
        switch response.status.code {
        case 200: break
        case 429, 500..<600:
            throw .transient(reason: "Naver answered HTTP \(response.status.code)", retryAfter: .seconds(5))
        // "회원 프로필 조회": 401 with resultcode 024 (authentication failed) for an access token
        // that is expired, revoked or unknown.
        case 401: throw .rejected(error: "invalid_token", description: nil, code: "024")
        default: throw .invalidResponse("Naver's profile API answered HTTP \(response.status.code)")
        }
        guard let profile = try? JSONDecoder().decode(NaverProfile.self, from: response.body),
            profile.resultcode == "00", let person = profile.response, !person.id.isEmpty
        else {
            throw .invalidResponse("Naver's profile API did not name the person")
        }
        return ProviderIdentity(subject: person.id, displayName: person.nickname ?? person.name)
    }
}

/// Everything Naver's token endpoint may answer, success or error, all under HTTP 200.
private struct NaverTokenAnswer: Decodable {
    var accessToken: String?
    var refreshToken: String?
    var tokenType: String?
    var expiresIn: LenientInteger?
    var idToken: String?
    var result: String?
    var error: OAuthErrorBody?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case refreshToken = "refresh_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case idToken = "id_token"
        case result, error
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decodeIfPresent(String.self, forKey: .accessToken)
        refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        tokenType = try container.decodeIfPresent(String.self, forKey: .tokenType)
        expiresIn = try container.decodeIfPresent(LenientInteger.self, forKey: .expiresIn)
        idToken = try container.decodeIfPresent(String.self, forKey: .idToken)
        result = try container.decodeIfPresent(String.self, forKey: .result)
        error = container.contains(.error) ? try OAuthErrorBody(from: decoder) : nil
    }
}

private struct NaverProfile: Decodable {
    struct Person: Decodable {
        var id: String
        var nickname: String?
        var name: String?
    }
    var resultcode: String
    var response: Person?
}
