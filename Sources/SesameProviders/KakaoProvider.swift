import FoundationEssentials
import NIOHTTP1
import SesameCore

/// Kakao Login (developers.kakao.com, "Kakao Login > REST API"): authorization code with PKCE,
/// no device flow. Who logged in comes from the ID token when OpenID Connect is enabled for the
/// app in Kakao's console, else from the user API. Logging out calls Kakao's logout (or unlink)
/// API with the access token, since Kakao offers no RFC 7009 revocation. A refresh ("Refresh
/// tokens") answers a new refresh token and `refresh_token_expires_in` only when the old one has
/// less than a month left; without them the engine keeps the old refresh token and its expiry
/// (RFC 6749 §6). An `invalid_grant` (e.g. `error_code` KOE322) means logging in again.
/// Scopes go space-separated, as Kakao's own SDKs send them; the REST page also speaks of
/// commas, and Kakao accepts both.
public final class KakaoProvider: OIDCBasedAdapter {
    /// What only a Kakao provider file configures.
    public struct Settings: Sendable, Hashable {
        /// What `Logout` calls at Kakao.
        public enum LogoutMethod: String, Sendable, Hashable, CaseIterable {
            /// "Logout": expires the tokens; the app stays connected to the account.
            case logout
            /// "Unlink": also withdraws the person's consent to the app.
            case unlink
        }

        /// What `Logout` calls.
        public var logoutMethod: LogoutMethod
        /// "Retrieve user information" (`/v2/user/me`).
        public var userEndpoint: String
        /// "Logout" (`/v1/user/logout`).
        public var logoutEndpoint: String
        /// "Unlink" (`/v1/user/unlink`).
        public var unlinkEndpoint: String
        /// "Retrieve token information" (`/v1/user/access_token_info`).
        public var tokenInfoEndpoint: String

        /// Kakao's documented URLs, with `logout` as the logout method.
        public init(
            logoutMethod: LogoutMethod = .logout,
            userEndpoint: String = "https://kapi.kakao.com/v2/user/me",
            logoutEndpoint: String = "https://kapi.kakao.com/v1/user/logout",
            unlinkEndpoint: String = "https://kapi.kakao.com/v1/user/unlink",
            tokenInfoEndpoint: String = "https://kapi.kakao.com/v1/user/access_token_info"
        ) {
            self.logoutMethod = logoutMethod
            self.userEndpoint = userEndpoint
            self.logoutEndpoint = logoutEndpoint
            self.unlinkEndpoint = unlinkEndpoint
            self.tokenInfoEndpoint = tokenInfoEndpoint
        }
    }

    /// The issuer of Kakao's ID tokens ("OpenID Connect > ID token").
    public static let issuer = "https://kauth.kakao.com"
    /// Kakao's documented OAuth endpoints.
    public static let endpoints = OAuthEndpoints(
        tokenEndpoint: "https://kauth.kakao.com/oauth/token",
        authorizationEndpoint: "https://kauth.kakao.com/oauth/authorize",
        jwksURI: "https://kauth.kakao.com/.well-known/jwks.json"
    )

    let base: GenericOIDCProvider
    let settings: Settings
    /// Kakao Login has the authorization code flow only.
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
        let userEndpoint = settings.userEndpoint
        // "Get token": client_id in the body, and client_secret only when enabled for the app.
        base = GenericOIDCProvider(
            configuration: configuration,
            http: http,
            credentials: .configured(configuration, placement: .body),
            profile: { accessToken async throws(ProviderError) in
                try await Self.user(userEndpoint, accessToken: accessToken, http: http)
            },
            revoker: { base, tokens async throws(ProviderError) in
                try await Self.endSession(tokens, settings: settings, base: base)
            }
        )
    }

    /// An ID token is checked like any; without one, Kakao's token information API must say
    /// the access token belongs to `subject` (the app user's `id`).
    public func verifyHandedOver(_ tokens: TokenSet, subject: String) async throws(ProviderError) {
        if let idToken = tokens.idToken {
            return try await base.verifyHandedOver(idToken: idToken, subject: subject)
        }
        let info = try await Self.api(settings.tokenInfoEndpoint, accessToken: tokens.accessToken, http: base.http)
        guard let id = (try? JSONDecoder().decode(KakaoTokenInfo.self, from: info))?.id else {
            throw .invalidResponse("Kakao's token information names no user id")
        }
        guard String(id) == subject else { throw .invalidResponse("the access token belongs to another Kakao user") }
    }

    /// "연결 끊기" (unlink) withdraws the person's consent to the app, ending every token of
    /// theirs; "로그아웃" (logout) expires only the tokens it is given.
    public var revocationEndsEveryGrant: Bool { settings.logoutMethod == .unlink }

    /// Logs out (or unlinks) with the access token. Kakao answers `code: -401` for an access
    /// token that expired; the refresh token then gets a current one, and the call is made again.
    public func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        try await OAuthHTTP.redacting(tokens.secrets) { () async throws(ProviderError) in
            try await Self.endSession(tokens, settings: settings, base: base)
        }
    }

    /// Logout (or unlink) with the access token, refreshing it once if Kakao says it is dead.
    static func endSession(_ tokens: TokenSet, settings: Settings, base: GenericOIDCProvider)
        async throws(ProviderError)
    {
        let endpoint = settings.logoutMethod == .logout ? settings.logoutEndpoint : settings.unlinkEndpoint
        do {
            _ = try await api(endpoint, method: .POST, accessToken: tokens.accessToken, http: base.http)
        } catch .rejected(error: deadAccessToken, _, _) {
            guard let refreshToken = tokens.refreshToken else {
                throw .rejected(error: "invalid_token", description: nil)
            }
            let current = try await GenericOIDCProvider.refreshGrant(
                refreshToken,
                of: tokens,
                through: base.tokenRequest
            )
            _ = try await api(endpoint, method: .POST, accessToken: current.accessToken, http: base.http)
        }
    }

    /// The error a Kakao API answer `{"code": -401}` maps to: the access token is not valid.
    static let deadAccessToken = "kakao_invalid_access_token"

    /// Who the access token belongs to, from "Retrieve user information": `id` is the app user
    /// id, and the nickname is the profile's, when the person agreed to share it.
    static func user(_ endpoint: String, accessToken: String, http: OAuthHTTP) async throws(ProviderError)
        -> ProviderIdentity
    {
        let body = try await api(endpoint, accessToken: accessToken, http: http)
        guard let user = try? JSONDecoder().decode(KakaoUser.self, from: body) else {
            throw .invalidResponse("Kakao's user information is not what its documentation describes")
        }
        let nickname = user.kakaoAccount?.profile?.nickname ?? user.properties?.nickname
        return ProviderIdentity(subject: String(user.id), displayName: nickname)
    }

    /// Calls a Kakao API (kapi.kakao.com) with `Authorization: Bearer`, and returns the body of
    /// a success. Its errors come as `{"msg": ..., "code": N}` ("REST API > Response code").
    static func api(_ url: String, method: HTTPMethod = .GET, accessToken: String, http: OAuthHTTP)
        async throws(ProviderError) -> Data
    {
        let response =
            method == .POST
            ? try await http.postForm(url, [], bearer: accessToken) : try await http.get(url, bearer: accessToken)
        if response.status.code == 200 { return response.body }
        let code = (try? JSONDecoder().decode(KakaoAPIError.self, from: response.body))?.code
        switch (response.status.code, code) {
        case (_, -401), (401, _): throw .rejected(error: deadAccessToken, description: "the access token is not valid")
        case (429, _), (500..<600, _):
            throw .transient(reason: "Kakao answered HTTP \(response.status.code)", retryAfter: .seconds(5))
        default:
            throw .invalidResponse("Kakao answered HTTP \(response.status.code) (code \(code.map(String.init) ?? "-"))")
        }
    }
}

private struct KakaoUser: Decodable {
    struct Account: Decodable {
        struct Profile: Decodable { var nickname: String? }
        var profile: Profile?
    }
    struct Properties: Decodable { var nickname: String? }
    var id: Int64
    var kakaoAccount: Account?
    var properties: Properties?

    enum CodingKeys: String, CodingKey {
        case id, properties
        case kakaoAccount = "kakao_account"
    }
}

private struct KakaoTokenInfo: Decodable {
    var id: Int64
}

private struct KakaoAPIError: Decodable {
    var code: Int
}
