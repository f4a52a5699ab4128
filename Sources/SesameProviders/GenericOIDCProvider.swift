import AsyncHTTPClient
import Crypto
import Foundation
import SesameCore

/// Any OpenID Connect provider, or plain OAuth 2.0 server with a userinfo endpoint, configured
/// by issuer (discovery) or explicit endpoints.
public final class GenericOIDCProvider: ProviderAdapter {
    public let configuration: ProviderConfiguration
    let http: OAuthHTTP
    let discovery: Discovery

    /// Creates the provider; `client` must outlive it.
    public init(configuration: ProviderConfiguration, client: HTTPClient) {
        self.configuration = configuration
        self.http = OAuthHTTP(client: client, timeout: configuration.requestTimeout, caFile: configuration.caFile)
        self.discovery = Discovery(configuration: configuration, http: http)
    }

    // MARK: Device flow (RFC 8628)

    public func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization {
        let endpoint = try await endpoint(.deviceAuthorizationEndpoint, for: "the device flow")
        let scopes = scopes ?? configuration.scopes
        let response = try await http.postForm(
            endpoint,
            clientFields + [("scope", scopes.joined(separator: " "))],
            basicAuth: basicAuth
        )
        let body = try OAuthHTTP.classify(response, as: DeviceAuthorizationResponse.self)
        // Shown on someone's terminal: the provider's text, escaped and capped.
        return DeviceAuthorization(
            verificationURI: ProviderText.sanitized(body.verificationURI, limit: 512),
            verificationURIComplete: body.verificationURIComplete.map { ProviderText.sanitized($0, limit: 1024) },
            userCode: ProviderText.sanitized(body.userCode, limit: 64),
            expiresAt: Date().addingTimeInterval(TimeInterval(body.expiresIn)),
            interval: .seconds(max(1, body.interval ?? 5)),
            deviceCode: body.deviceCode,
            scopes: scopes
        )
    }

    public func finishDeviceLogin(_ authorization: DeviceAuthorization) async throws(ProviderError) -> ProviderLogin {
        let tokenEndpoint = try await tokenEndpoint()
        var interval = authorization.interval
        while true {
            do {
                try await Task.sleep(for: interval)
            } catch {
                throw .expired
            }
            guard Date() < authorization.expiresAt else { throw .expired }
            let fields =
                clientFields + [
                    ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                    ("device_code", authorization.deviceCode),
                ]
            do {
                let response = try await http.postForm(
                    tokenEndpoint,
                    fields,
                    basicAuth: basicAuth,
                    timeout: configuration.tokenRequestTimeout
                )
                let tokens = try OAuthHTTP.classify(response, as: TokenResponse.self)
                // RFC 8628 §3.5: a plain RFC 6749 §5.1 answer, usually without an ID token.
                return try await login(tokens, scopes: authorization.scopes, nonce: nil)
            } catch .rejected(error: "authorization_pending", _) {
                continue
            } catch .rejected(error: "slow_down", _) {
                interval += .seconds(5)
            } catch .transient {
                // Keep polling at the same pace until the code expires; the provider may come back.
                continue
            }
        }
    }

    // MARK: Authorization code with PKCE (RFC 7636) and a loopback redirect (RFC 8252)

    public func startAuthorizationCodeLogin(redirectURI: String, scopes: [String]?) async throws(ProviderError)
        -> AuthorizationRequest
    {
        let endpoint = try await endpoint(.authorizationEndpoint, for: "a browser login")
        guard var url = URLComponents(string: endpoint) else {
            throw .invalidResponse("the authorization endpoint is not a URL")
        }
        let state = Self.randomToken()
        let verifier = Self.randomToken()
        let nonce = Self.randomToken()
        let challenge = Data(SHA256.hash(data: Data(verifier.utf8))).base64URLEncoded
        url.queryItems =
            (url.queryItems ?? []) + [
                URLQueryItem(name: "response_type", value: "code"),
                URLQueryItem(name: "client_id", value: configuration.clientID),
                URLQueryItem(name: "redirect_uri", value: redirectURI),
                URLQueryItem(name: "scope", value: (scopes ?? configuration.scopes).joined(separator: " ")),
                URLQueryItem(name: "state", value: state),
                URLQueryItem(name: "nonce", value: nonce),
                URLQueryItem(name: "code_challenge", value: challenge),
                URLQueryItem(name: "code_challenge_method", value: "S256"),
            ]
        guard let text = url.string else { throw .invalidResponse("the authorization endpoint is not a URL") }
        return AuthorizationRequest(
            url: text,
            state: state,
            redirectURI: redirectURI,
            codeVerifier: verifier,
            nonce: nonce,
            scopes: scopes ?? configuration.scopes
        )
    }

    public func finishAuthorizationCodeLogin(_ request: AuthorizationRequest, code: String) async throws(ProviderError)
        -> ProviderLogin
    {
        let fields =
            clientFields + [
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", request.redirectURI),
                ("code_verifier", request.codeVerifier),
            ]
        let response = try await http.postForm(
            try await tokenEndpoint(),
            fields,
            basicAuth: basicAuth,
            timeout: configuration.tokenRequestTimeout
        )
        let tokens = try OAuthHTTP.classify(response, as: TokenResponse.self)
        return try await login(tokens, scopes: request.scopes, nonce: request.nonce)
    }

    // MARK: Revocation (RFC 7009)

    public func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        let endpoint = try await endpoint(.revocationEndpoint, for: "revoking at the provider")
        // The refresh token first: revoking it ends the grant; the access token then stops early.
        let targets = [(tokens.refreshToken, "refresh_token"), (Optional(tokens.accessToken), "access_token")]
        for case let (token?, hint) in targets {
            let response = try await http.postForm(
                endpoint,
                clientFields + [("token", token), ("token_type_hint", hint)],
                basicAuth: basicAuth
            )
            switch response.status.code {
            case 200..<300: continue
            case 429, 500..<600: throw .transient(reason: "HTTP \(response.status.code)", retryAfter: .seconds(5))
            default: throw .invalidResponse("revocation answered HTTP \(response.status.code)")
            }
        }
    }

    // MARK: Shared

    /// Public clients name themselves in the form; confidential ones authenticate with HTTP Basic.
    var clientFields: [(String, String)] {
        configuration.clientSecret == nil ? [("client_id", configuration.clientID)] : []
    }

    var basicAuth: (String, String)? {
        configuration.clientSecret.map { (configuration.clientID, $0) }
    }

    func tokenEndpoint() async throws(ProviderError) -> String {
        try await endpoint(.tokenEndpoint, for: "getting tokens")
    }

    /// One endpoint, or an error naming what is missing and which key supplies it.
    func endpoint(_ name: OAuthEndpoints.CodingKeys, for purpose: String) async throws(ProviderError) -> String {
        try await discovery.endpoints().require(name, for: purpose, discovered: discovery.discovers)
    }

    private static func randomToken() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64URLEncoded
    }
}

/// A device authorization response (RFC 8628 §3.2).
private struct DeviceAuthorizationResponse: Decodable {
    var deviceCode: String
    var userCode: String
    var verificationURI: String
    var verificationURIComplete: String?
    var expiresIn: Int
    var interval: Int?

    enum CodingKeys: String, CodingKey {
        case deviceCode = "device_code"
        case userCode = "user_code"
        case verificationURI = "verification_uri"
        case verificationURIComplete = "verification_uri_complete"
        case expiresIn = "expires_in"
        case interval
    }
}
