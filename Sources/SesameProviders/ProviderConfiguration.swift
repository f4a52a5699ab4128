import FoundationEssentials

/// One configured OAuth 2.0 / OpenID Connect provider, as `providers.d/NAME.toml` describes it.
public struct ProviderConfiguration: Sendable, Hashable {
    /// How the login flow is chosen when the caller does not say.
    public enum Flow: String, Sendable, Hashable, CaseIterable {
        /// Device authorization grant (RFC 8628).
        case device
        /// Authorization code with PKCE and a loopback redirect (RFC 7636, RFC 8252).
        case authorizationCode
    }

    /// The provider's name, used in account ids and events.
    public var name: String
    /// Which adapter speaks to it, with that adapter's own settings.
    public var kind: ProviderKind
    /// The issuer; endpoints not given explicitly are discovered from it.
    public var issuer: String?
    /// Whether endpoints the file does not name are read from the issuer's discovery document;
    /// false for servers that publish none (the issuer then only names who signs ID tokens).
    public var discovery: Bool
    /// Explicit endpoints, which win over discovery.
    public var endpoints: OAuthEndpoints
    /// The OAuth client id.
    public var clientID: String
    /// The client secret for confidential clients, already read from its credential or file.
    public var clientSecret: String?
    /// Scopes asked for at login.
    public var scopes: [String]
    /// The flow `Login` uses by default.
    public var flow: Flow
    /// A PEM bundle of extra trusted CAs for a private issuer.
    public var caFile: String?
    /// How long one HTTP request may take, and how long a caller waits for a refresh.
    public var requestTimeout: Duration
    /// How long a token-endpoint request (code exchange, device poll, refresh) may take before
    /// sesamed stops waiting for its answer. Longer than `requestTimeout` on purpose: the
    /// provider may already have issued (and rotated) tokens, and a dropped answer loses them
    /// (RFC 9700 §4.14.2).
    public var tokenRequestTimeout: Duration
    /// ID-token signature algorithms accepted.
    public var allowedAlgorithms: [String]
    /// Extra parameters of the authorization request (e.g. Google's `access_type`), never one
    /// Sesame sets itself.
    public var authorizationParameters: [String: String]
    /// The one loopback redirect URI registered at the provider, for providers that accept no
    /// other port or path; nil when any loopback port will do (RFC 8252 §7.3).
    public var redirectURI: String?

    /// How often one account may be refreshed (the provider's own rules; `min_refresh_interval`).
    public var refreshPacing = RefreshPacing()

    /// What the provider's file says in a way that still works but is to be mended (an old
    /// spelling), each sentence naming the file: logged when it is read, and listed by
    /// `sesamectl providers`.
    public var notices: [String] = []

    /// Creates a provider configuration.
    public init(
        name: String,
        kind: ProviderKind = .oidc,
        issuer: String? = nil,
        discovery: Bool = true,
        endpoints: OAuthEndpoints = OAuthEndpoints(),
        clientID: String,
        clientSecret: String? = nil,
        scopes: [String] = ["openid"],
        flow: Flow = .device,
        caFile: String? = nil,
        requestTimeout: Duration = .seconds(10),
        tokenRequestTimeout: Duration = .seconds(120),
        allowedAlgorithms: [String] = ["RS256", "ES256", "PS256"],
        authorizationParameters: [String: String] = [:],
        redirectURI: String? = nil
    ) {
        self.name = name
        self.kind = kind
        self.issuer = issuer
        self.discovery = discovery
        self.endpoints = endpoints
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scopes = scopes
        self.flow = flow
        self.caFile = caFile
        self.requestTimeout = requestTimeout
        self.tokenRequestTimeout = tokenRequestTimeout
        self.allowedAlgorithms = allowedAlgorithms
        self.authorizationParameters = authorizationParameters
        self.redirectURI = redirectURI
    }

    /// Authorization-request parameters Sesame sets itself, or that would change where or how
    /// the code comes back, which `authorizationParameters` may not set: each one guards the
    /// login (RFC 6749 §4.1.1, RFC 7636 §4.3, OpenID Connect Core §3.1.2.1 and §6, OAuth 2.0
    /// Multiple Response Types §2.1).
    public static let reservedAuthorizationParameters: Set<String> = [
        "response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge",
        "code_challenge_method", "response_mode", "request", "request_uri",
    ]
}

/// The adapter a provider file selects with `type`, and the settings only that adapter has.
public enum ProviderKind: Sendable, Hashable {
    /// Any OpenID Connect provider or OAuth 2.0 server.
    case oidc
    /// Kakao Login.
    case kakao(KakaoProvider.Settings)
    /// Naver Login.
    case naver(NaverProvider.Settings)
    /// Google.
    case google
    /// Sign in with Apple.
    case apple(AppleProvider.Settings)

    /// The name a provider file's `type` uses.
    public var typeName: String {
        switch self {
        case .oidc: "oidc"
        case .kakao: "kakao"
        case .naver: "naver"
        case .google: "google"
        case .apple: "apple"
        }
    }
}

/// The endpoints of an authorization server (RFC 8414 / OpenID Connect Discovery names).
public struct OAuthEndpoints: Sendable, Hashable, Codable {
    /// Where tokens are issued and refreshed.
    public var tokenEndpoint: String?
    /// Where device authorizations start.
    public var deviceAuthorizationEndpoint: String?
    /// Where the browser goes for an authorization-code login.
    public var authorizationEndpoint: String?
    /// Where tokens are revoked.
    public var revocationEndpoint: String?
    /// The signing keys of ID tokens.
    public var jwksURI: String?
    /// Who the access token belongs to (OpenID Connect Core §5.3), for providers that give no
    /// ID token.
    public var userinfoEndpoint: String?
    /// Whether a token is still active (RFC 7662), when the provider offers it.
    public var introspectionEndpoint: String?
    /// The issuer the server names itself.
    public var issuer: String?

    enum CodingKeys: String, CodingKey {
        case tokenEndpoint = "token_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case authorizationEndpoint = "authorization_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case jwksURI = "jwks_uri"
        case userinfoEndpoint = "userinfo_endpoint"
        case introspectionEndpoint = "introspection_endpoint"
        case issuer
    }

    /// Creates a set of endpoints; any may be nil.
    public init(
        tokenEndpoint: String? = nil,
        deviceAuthorizationEndpoint: String? = nil,
        authorizationEndpoint: String? = nil,
        revocationEndpoint: String? = nil,
        jwksURI: String? = nil,
        userinfoEndpoint: String? = nil,
        introspectionEndpoint: String? = nil,
        issuer: String? = nil
    ) {
        self.tokenEndpoint = tokenEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.authorizationEndpoint = authorizationEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.jwksURI = jwksURI
        self.userinfoEndpoint = userinfoEndpoint
        self.introspectionEndpoint = introspectionEndpoint
        self.issuer = issuer
    }

    /// These endpoints, with any that are missing taken from `discovered` (or from defaults).
    public func filled(from discovered: OAuthEndpoints) -> OAuthEndpoints {
        OAuthEndpoints(
            tokenEndpoint: tokenEndpoint ?? discovered.tokenEndpoint,
            deviceAuthorizationEndpoint: deviceAuthorizationEndpoint ?? discovered.deviceAuthorizationEndpoint,
            authorizationEndpoint: authorizationEndpoint ?? discovered.authorizationEndpoint,
            revocationEndpoint: revocationEndpoint ?? discovered.revocationEndpoint,
            jwksURI: jwksURI ?? discovered.jwksURI,
            userinfoEndpoint: userinfoEndpoint ?? discovered.userinfoEndpoint,
            introspectionEndpoint: introspectionEndpoint ?? discovered.introspectionEndpoint,
            issuer: issuer ?? discovered.issuer
        )
    }
}

extension OAuthEndpoints {
    /// The endpoint `name` (as discovery calls it), when known.
    subscript(name: CodingKeys) -> String? {
        switch name {
        case .tokenEndpoint: tokenEndpoint
        case .deviceAuthorizationEndpoint: deviceAuthorizationEndpoint
        case .authorizationEndpoint: authorizationEndpoint
        case .revocationEndpoint: revocationEndpoint
        case .jwksURI: jwksURI
        case .userinfoEndpoint: userinfoEndpoint
        case .introspectionEndpoint: introspectionEndpoint
        case .issuer: issuer
        }
    }

    /// The provider file's key for the endpoint `name`: `endpoints.token`, …, or `issuer`.
    static func fileKey(_ name: CodingKeys) -> String {
        switch name {
        case .tokenEndpoint: "endpoints.token"
        case .deviceAuthorizationEndpoint: "endpoints.device_authorization"
        case .authorizationEndpoint: "endpoints.authorization"
        case .revocationEndpoint: "endpoints.revocation"
        case .jwksURI: "endpoints.jwks"
        case .userinfoEndpoint: "endpoints.userinfo"
        case .introspectionEndpoint: "endpoints.introspection"
        case .issuer: "issuer"
        }
    }

    /// The endpoint `name`, or an error that says where it was looked for and which
    /// provider-file key supplies it.
    func require(_ name: CodingKeys, for purpose: String, discovered: Bool) throws(ProviderError) -> String {
        if let url = self[name] { return url }
        let looked =
            discovered
            ? "the provider's discovery document lists no \(name.stringValue)"
            : "the provider file names no issuer to discover it from"
        throw .misconfigured(
            "\(purpose) needs the \(name.stringValue), and \(looked); set \(Self.fileKey(name)) in the provider file"
        )
    }
}
