import FoundationEssentials
import SesameProtocol

/// Checking a provider file against the provider, before anyone logs in: the discovery document
/// names the file's issuer, every endpoint answers, and the provider knows the client. The client
/// is checked at the token endpoint, for every provider type: a refresh with a made-up refresh
/// token is refused as `invalid_grant` when the client is known and as `invalid_client` when it
/// is not (RFC 6749 §5.2), so nothing is issued and no login is left pending at the provider.
extension GenericOIDCProvider {
    /// Every check, in the order a person reads the file; each asks the provider once, paid
    /// for first with `pay`, and the checks end where it refuses.
    public func checkConfiguration(pay: @escaping DevicePolling.Payment) async -> [ProviderCheck] {
        var checks: [ProviderCheck] = []
        var endpoints = configuration.endpoints
        let unpaid = { () -> ProviderCheck? in
            pay().map { wait in
                let seconds = max(wait.components.seconds, 1)
                return .failed(
                    "remaining checks",
                    key: nil,
                    "not checked: this user's calls to the provider are at sesamed's limit; try again in \(seconds) s"
                )
            }
        }
        if let url = discovery.documentURL, let issuer = configuration.issuer {
            if let refusal = unpaid() { return [refusal] }
            do {
                endpoints = endpoints.filled(from: try await discovery.fetch(issuer: issuer).endpoints)
                checks.append(.passed("discovery document", url: url, key: "issuer", "names this issuer"))
            } catch {
                // Without the document, the endpoints it would give are not known.
                return [.failed("discovery document", url: url, key: "issuer", error.checkProblem)]
            }
        }
        if let jwks = endpoints.jwksURI {
            if let refusal = unpaid() { return checks + [refusal] }
            checks.append(await keysCheck(jwks, key: key(for: .jwksURI)))
        }
        guard let token = endpoints.tokenEndpoint else {
            return checks + [.failed("token endpoint", key: "endpoints.token", "is not given, nor discovered")]
        }
        if let refusal = unpaid() { return checks + [refusal] }
        checks += await clientChecks(tokenEndpoint: token, key: key(for: .tokenEndpoint))
        for (name, subject) in Self.answering {
            if let url = endpoints[name] {
                if let refusal = unpaid() { return checks + [refusal] }
                checks.append(await answerCheck(subject, url: url, key: key(for: name)))
            } else if name == Self.flowEndpoint(configuration.flow) {
                let problem = "is needed for the \(configuration.flow) flow, and neither given nor discovered"
                checks.append(.failed(subject, key: OAuthEndpoints.fileKey(name), problem))
            }
        }
        return checks
    }

    /// The endpoints checked only for an answer, and what they are called.
    private static let answering: [(OAuthEndpoints.CodingKeys, String)] = [
        (.deviceAuthorizationEndpoint, "device authorization endpoint"),
        (.authorizationEndpoint, "authorization endpoint"), (.revocationEndpoint, "revocation endpoint"),
        (.userinfoEndpoint, "userinfo endpoint"), (.introspectionEndpoint, "introspection endpoint"),
    ]

    private static func flowEndpoint(_ flow: ProviderConfiguration.Flow) -> OAuthEndpoints.CodingKeys {
        switch flow {
        case .device: .deviceAuthorizationEndpoint
        case .authorizationCode: .authorizationEndpoint
        }
    }

    /// The file's key for the endpoint when the file names it, else `issuer`, whose discovery
    /// document gave it.
    private func key(for endpoint: OAuthEndpoints.CodingKeys) -> String {
        configuration.endpoints[endpoint] == nil ? "issuer" : OAuthEndpoints.fileKey(endpoint)
    }

    /// The token endpoint answers, and with an OAuth error that says whether it knows the client.
    private func clientChecks(tokenEndpoint url: String, key: String) async -> [ProviderCheck] {
        let response: OAuthHTTP.Response
        do {
            // The client's credentials, as a refresh presents them (a secret, or a signed assertion).
            let (credentialFields, basicAuth) = try await credentials.present(clientID: configuration.clientID)
            let fields = [("grant_type", "refresh_token"), ("refresh_token", Self.randomToken())]
            response = try await http.postForm(url, credentialFields + fields, basicAuth: basicAuth)
        } catch .misconfigured(let why) {
            // sesamed could not make its own credentials (a key that does not sign): nothing was sent.
            return [.failed("client credentials", key: nil, why)]
        } catch {
            return [.failed("token endpoint", url: url, key: key, error.checkProblem)]
        }
        let status = response.status.code
        guard let code = (try? JSONDecoder().decode(OAuthErrorBody.self, from: response.body))?.error else {
            let problem =
                "answered a made-up refresh token with HTTP \(status) and no OAuth error: is it the token endpoint?"
            return [.failed("token endpoint", url: url, key: key, problem)]
        }
        let answered = ProviderCheck.passed("token endpoint", url: url, key: key, "answers (HTTP \(status))")
        switch code {
        case "invalid_grant":
            return [answered, .passed("client_id", key: "client_id", "the provider knows the client")]
        case "invalid_client":
            let problem =
                "the provider does not know client \"\(configuration.clientID)\" or refuses its secret (invalid_client)"
            return [answered, .failed("client_id", key: "client_id", problem)]
        case "unauthorized_client":
            let problem = "the provider knows the client but allows it no refresh tokens (unauthorized_client)"
            return [answered, .failed("client_id", key: "client_id", problem)]
        default:
            let shown = ProviderText.sanitized(code, limit: 60)
            return [answered, .passed("client_id", key: "client_id", "not confirmed: the provider answered \(shown)")]
        }
    }

    /// The JWKS answers with a key set (RFC 7517 §5), which ID tokens are checked against.
    private func keysCheck(_ url: String, key: String) async -> ProviderCheck {
        let response: OAuthHTTP.Response
        do {
            response = try await http.get(url)
        } catch {
            return .failed("signing keys", url: url, key: key, error.checkProblem)
        }
        let status = response.status.code
        guard (200..<300).contains(status) else { return .failed("signing keys", url: url, key: key, "HTTP \(status)") }
        guard let set = try? JSONDecoder().decode(KeySetShape.self, from: response.body), !set.keys.isEmpty else {
            return .failed("signing keys", url: url, key: key, "the answer is not a JSON Web Key Set with keys")
        }
        return .passed("signing keys", url: url, key: key, "\(set.keys.count) key\(set.keys.count == 1 ? "" : "s")")
    }

    /// Any HTTP answer passes: the endpoint is there, asked without what a real request carries.
    private func answerCheck(_ subject: String, url: String, key: String) async -> ProviderCheck {
        do {
            return .passed(subject, url: url, key: key, "answers (HTTP \(try await http.get(url).status.code))")
        } catch {
            return .failed(subject, url: url, key: key, error.checkProblem)
        }
    }
}

/// A JSON Web Key Set, read only as far as counting its keys.
private struct KeySetShape: Decodable {
    struct Key: Decodable {}
    var keys: [Key]
}
