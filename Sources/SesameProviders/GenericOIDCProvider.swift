import AsyncHTTPClient
import Crypto
import Foundation
import SesameCore

/// Any OpenID Connect provider, configured by issuer (discovery) or explicit endpoints.
public final class GenericOIDCProvider: ProviderAdapter {
    public let configuration: ProviderConfiguration
    private let http: OAuthHTTP
    private let discovery: Discovery

    /// Creates the provider; `client` must outlive it.
    public init(configuration: ProviderConfiguration, client: HTTPClient) {
        self.configuration = configuration
        self.http = OAuthHTTP(client: client, timeout: configuration.requestTimeout)
        self.discovery = Discovery(configuration: configuration, http: http)
    }

    public var name: String { configuration.name }

    public var defaultFlow: ProviderConfiguration.Flow { configuration.flow }

    public var capabilities: ProviderCapabilities {
        let explicit = configuration.endpoints
        let discovering = configuration.issuer != nil
        return ProviderCapabilities(
            deviceFlow: discovering || explicit.deviceAuthorizationEndpoint != nil,
            authorizationCodeFlow: discovering || explicit.authorizationEndpoint != nil,
            revocation: discovering || explicit.revocationEndpoint != nil
        )
    }

    // MARK: Device flow (RFC 8628)

    public func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization {
        let endpoints = try await discovery.endpoints()
        guard let endpoint = endpoints.deviceAuthorizationEndpoint else { throw .unsupported("the device flow") }
        let scopes = scopes ?? configuration.scopes
        let response = try await http.postForm(
            endpoint,
            clientFields + [("scope", scopes.joined(separator: " "))],
            basicAuth: basicAuth
        )
        struct Body: Decodable {
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
        let body = try OAuthHTTP.classify(response, as: Body.self)
        return DeviceAuthorization(
            verificationURI: body.verificationURI,
            verificationURIComplete: body.verificationURIComplete,
            userCode: body.userCode,
            expiresAt: Date().addingTimeInterval(TimeInterval(body.expiresIn)),
            interval: .seconds(max(1, body.interval ?? 5)),
            deviceCode: body.deviceCode,
            scopes: scopes
        )
    }

    public func finishDeviceLogin(_ authorization: DeviceAuthorization) async throws(ProviderError) -> ProviderLogin {
        let endpoints = try await discovery.endpoints()
        guard let tokenEndpoint = endpoints.tokenEndpoint else { throw .unsupported("a token endpoint") }
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
                let response = try await http.postForm(tokenEndpoint, fields, basicAuth: basicAuth)
                let tokens = try OAuthHTTP.classify(response, as: TokenResponse.self)
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
        let endpoints = try await discovery.endpoints()
        guard let endpoint = endpoints.authorizationEndpoint, var url = URLComponents(string: endpoint) else {
            throw .unsupported("the authorization code flow")
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
        let endpoints = try await discovery.endpoints()
        guard let tokenEndpoint = endpoints.tokenEndpoint else { throw .unsupported("a token endpoint") }
        let fields =
            clientFields + [
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", request.redirectURI),
                ("code_verifier", request.codeVerifier),
            ]
        let response = try await http.postForm(tokenEndpoint, fields, basicAuth: basicAuth)
        let tokens = try OAuthHTTP.classify(response, as: TokenResponse.self)
        return try await login(tokens, scopes: request.scopes, nonce: request.nonce)
    }

    // MARK: Refresh (RFC 6749 §6) and revocation (RFC 7009)

    public func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshFailure) -> TokenSet {
        guard let refreshToken = tokens.refreshToken else { throw .unavailable }
        do throws(ProviderError) {
            let endpoints = try await discovery.endpoints()
            guard let tokenEndpoint = endpoints.tokenEndpoint else {
                throw ProviderError.unsupported("a token endpoint")
            }
            let response = try await http.postForm(
                tokenEndpoint,
                clientFields + [("grant_type", "refresh_token"), ("refresh_token", refreshToken)],
                basicAuth: basicAuth
            )
            let body = try OAuthHTTP.classify(response, as: TokenResponse.self)
            if let idToken = body.idToken {
                // A refreshed ID token must still be about the same person, for this client.
                let claims = try await discovery.validator().validate(idToken, nonce: nil)
                guard claims.subject.value == account.subject else {
                    throw ProviderError.invalidResponse("the refreshed ID token is about another subject")
                }
            }
            return body.tokenSet(now: Date(), requestedScopes: tokens.scopes)
        } catch {
            throw error.refreshFailure
        }
    }

    public func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        let endpoints = try await discovery.endpoints()
        guard let endpoint = endpoints.revocationEndpoint else { throw .unsupported("revocation") }
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
    private var clientFields: [(String, String)] {
        configuration.clientSecret == nil ? [("client_id", configuration.clientID)] : []
    }

    private var basicAuth: (String, String)? {
        configuration.clientSecret.map { (configuration.clientID, $0) }
    }

    private func login(_ body: TokenResponse, scopes: [String], nonce: String?) async throws(ProviderError)
        -> ProviderLogin
    {
        guard let idToken = body.idToken else {
            throw .invalidResponse("the token response has no ID token; the openid scope is required")
        }
        let claims = try await discovery.validator().validate(idToken, nonce: nonce)
        return ProviderLogin(
            tokens: body.tokenSet(now: Date(), requestedScopes: scopes),
            subject: claims.subject.value,
            displayName: claims.name ?? claims.preferredUsername ?? claims.email
        )
    }

    private static func randomToken() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64URLEncoded
    }
}

extension ProviderError {
    /// What a failed refresh means for the session, in one place.
    var refreshFailure: RefreshFailure {
        switch self {
        case .transient(let reason, let retryAfter): .transient(reason: reason, retryAfter: retryAfter)
        case .rejected(error: "invalid_grant", let description): .needsLogin(reason: description ?? "invalid_grant")
        case .rejected(let error, _): .needsLogin(reason: error)
        case .accessDenied, .expired: .needsLogin(reason: "\(self)")
        case .unsupported: .unavailable
        case .invalidResponse(let reason): .invalidResponse(reason: reason)
        }
    }
}

/// Endpoints discovered once (OpenID Connect Discovery / RFC 8414) and the ID-token validator
/// built on them.
private actor Discovery {
    let configuration: ProviderConfiguration
    let http: OAuthHTTP
    private var resolved: OAuthEndpoints?
    private var idTokens: IDTokenValidator?

    init(configuration: ProviderConfiguration, http: OAuthHTTP) {
        self.configuration = configuration
        self.http = http
    }

    func endpoints() async throws(ProviderError) -> OAuthEndpoints {
        if let resolved { return resolved }
        var endpoints = configuration.endpoints
        if let issuer = configuration.issuer {
            let url =
                issuer.hasSuffix("/")
                ? issuer + ".well-known/openid-configuration" : issuer + "/.well-known/openid-configuration"
            let discovered = try OAuthHTTP.classify(try await http.get(url), as: OAuthEndpoints.self)
            guard discovered.issuer == issuer else {
                throw .invalidResponse("discovery names issuer \(discovered.issuer ?? "none"), not \(issuer)")
            }
            endpoints = endpoints.filled(from: discovered)
        }
        resolved = endpoints
        return endpoints
    }

    func validator() async throws(ProviderError) -> IDTokenValidator {
        if let idTokens { return idTokens }
        let endpoints = try await endpoints()
        guard let jwks = endpoints.jwksURI, let issuer = endpoints.issuer ?? configuration.issuer else {
            throw .unsupported("ID-token validation (no jwks_uri or issuer configured)")
        }
        let validator = IDTokenValidator(
            issuer: issuer,
            clientID: configuration.clientID,
            jwksURI: jwks,
            allowedAlgorithms: configuration.allowedAlgorithms,
            http: http
        )
        idTokens = validator
        return validator
    }
}
