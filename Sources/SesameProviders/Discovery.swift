import FoundationEssentials

/// Endpoints discovered once (OpenID Connect Discovery 1.0 §4 / RFC 8414 §3) and filled in
/// with the provider file's explicit ones, and the ID-token validator built on them.
actor Discovery {
    let configuration: ProviderConfiguration
    let http: OAuthHTTP
    private var resolved: OAuthEndpoints?
    /// The grants the discovery document lists (RFC 8414 §2 `grant_types_supported`); nil
    /// without discovery or when it lists none.
    private var grantTypes: [String]?
    private var idTokens: IDTokenValidator?

    init(configuration: ProviderConfiguration, http: OAuthHTTP) {
        self.configuration = configuration
        self.http = http
    }

    /// Whether endpoints the file does not name come from a discovery document.
    nonisolated var discovers: Bool { configuration.issuer != nil && configuration.discovery }

    /// The provider's endpoints: the file's, then the discovery document's.
    func endpoints() async throws(ProviderError) -> OAuthEndpoints {
        if let resolved { return resolved }
        var endpoints = configuration.endpoints
        if discovers, let issuer = configuration.issuer {
            let (discovered, supported) = try await fetch(issuer: issuer)
            endpoints = endpoints.filled(from: discovered)
            grantTypes = supported
        }
        resolved = endpoints
        return endpoints
    }

    /// Where the issuer's discovery document is (OpenID Connect Discovery 1.0 §4).
    nonisolated var documentURL: String? {
        guard discovers, let issuer = configuration.issuer else { return nil }
        return issuer.hasSuffix("/")
            ? issuer + ".well-known/openid-configuration" : issuer + "/.well-known/openid-configuration"
    }

    /// The discovery document's endpoints and grants, asked now, and checked to name `issuer`.
    func fetch(issuer: String) async throws(ProviderError) -> (endpoints: OAuthEndpoints, grantTypes: [String]?) {
        let response = try await http.get(documentURL ?? issuer)
        // OpenID Connect Discovery 1.0 §4.2: the answer is the document, with 200. An error
        // there refuses nothing an operation asked for (a refresh that needs the token
        // endpoint is not thereby refused), and its words are not repeated: the request
        // carried none of the operation's secrets to cut out of them.
        let status = response.status.code
        guard (200..<300).contains(status) || status == 429 || status >= 500 else {
            throw .invalidResponse("the discovery document answered HTTP \(status)")
        }
        let discovered = try OAuthHTTP.classify(response, as: OAuthEndpoints.self)
        // OpenID Connect Discovery 1.0 §4.3: the document must name exactly this issuer.
        guard discovered.issuer == issuer else {
            let named = discovered.issuer.map { ProviderText.sanitized($0, limit: 120) } ?? "none"
            throw .invalidResponse("discovery names issuer \(named), not \(issuer)")
        }
        return (discovered, (try? JSONDecoder().decode(DiscoveredGrantTypes.self, from: response.body))?.supported)
    }

    /// Whether the discovery document lists `grant` among the grants the issuer supports.
    func supports(grant: String) async throws(ProviderError) -> Bool {
        _ = try await endpoints()
        return grantTypes?.contains(grant) ?? false
    }

    /// The validator of this provider's ID tokens, or nil when the provider file and discovery
    /// give no JWKS and issuer to check them against.
    func validatorIfConfigured() async throws(ProviderError) -> IDTokenValidator? {
        if let idTokens { return idTokens }
        let endpoints = try await endpoints()
        guard let jwks = endpoints.jwksURI, let issuer = endpoints.issuer ?? configuration.issuer else { return nil }
        // Google documents `iss` as https://accounts.google.com or accounts.google.com
        // ("Validating an ID token").
        let googleAlias: Set<String> =
            configuration.kind == .google && issuer == GoogleProvider.issuer ? ["accounts.google.com"] : []
        let validator = IDTokenValidator(
            issuer: issuer,
            aliases: googleAlias,
            clientID: configuration.clientID,
            jwksURI: jwks,
            allowedAlgorithms: configuration.allowedAlgorithms,
            http: http
        )
        idTokens = validator
        return validator
    }

    /// The validator, or an error naming the keys that would configure it.
    func validator() async throws(ProviderError) -> IDTokenValidator {
        guard let validator = try await validatorIfConfigured() else {
            throw .misconfigured(
                "checking an ID token needs the provider's signing keys and issuer; set issuer (for discovery) "
                    + "or endpoints.jwks and issuer in the provider file"
            )
        }
        return validator
    }
}

/// The one member of a discovery document that lists grants rather than endpoints.
private struct DiscoveredGrantTypes: Decodable {
    var supported: [String]?

    enum CodingKeys: String, CodingKey {
        case supported = "grant_types_supported"
    }
}
