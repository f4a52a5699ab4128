import FoundationEssentials
import SesameCore

/// What a provider says, asked now, of an access token Sesame holds.
public enum AccessTokenCheck: Sendable, Hashable {
    /// The provider accepts it, as the account's subject's.
    case accepted
    /// The provider no longer accepts it (revoked, or ended some other way); why, in Sesame's
    /// words, never the provider's free text.
    case rejected(String)
    /// The provider offers no way to ask; why, and which provider-file key would give one.
    case cannotCheck(String)
}

/// Asking the provider whether an access token still works: a token whose grant was revoked
/// at the provider stays valid by its expiry time, and only the provider can say otherwise.
extension GenericOIDCProvider {
    /// Asks, in order of what the provider offers: token introspection (RFC 7662), the
    /// provider's own profile or token-information API, or the userinfo endpoint (OpenID Connect
    /// Core §5.3, whose refusal of a bearer token is RFC 6750 §3.1's `invalid_token`, HTTP 401).
    public func checkAccessToken(_ tokens: TokenSet, subject: String) async throws(ProviderError) -> AccessTokenCheck {
        let endpoints = try await discovery.endpoints()
        if let introspection = endpoints.introspectionEndpoint {
            return try await introspect(tokens.accessToken, at: introspection, subject: subject)
        }
        if let profile {
            do {
                return verdict(about: try await profile(tokens.accessToken).subject, subject: subject)
            } catch .rejected(let error, _, let code) {
                return .rejected("the provider refused the access token (\(code ?? error))")
            }
        }
        if let userinfo = endpoints.userinfoEndpoint {
            let response = try await http.get(userinfo, bearer: tokens.accessToken)
            if response.status.code == 401 { return .rejected("the provider refused the access token (HTTP 401)") }
            let claims = try OAuthHTTP.classify(response, as: UserinfoClaims.self)
            return verdict(about: claims.sub, subject: subject)
        }
        return .cannotCheck(
            "the provider names neither a token introspection nor a userinfo endpoint; "
                + "set endpoints.introspection or endpoints.userinfo in the provider file"
        )
    }

    /// RFC 7662 §2: the client authenticates as at the token endpoint, and `active` is the answer.
    private func introspect(_ accessToken: String, at endpoint: String, subject: String) async throws(ProviderError)
        -> AccessTokenCheck
    {
        let response = try await post(endpoint, [("token", accessToken), ("token_type_hint", "access_token")])
        let answer = try OAuthHTTP.classify(response, as: IntrospectionAnswer.self)
        guard answer.active else { return .rejected("the provider says the access token is no longer active") }
        // §2.2: `sub` is optional; when given it must be the account's.
        return answer.sub.map { verdict(about: $0, subject: subject) } ?? .accepted
    }

    private func verdict(about owner: String, subject: String) -> AccessTokenCheck {
        owner == subject ? .accepted : .rejected("the provider says the access token belongs to someone else")
    }
}

/// An introspection answer (RFC 7662 §2.2), as far as Sesame reads it.
struct IntrospectionAnswer: Decodable {
    var active: Bool
    var sub: String?
}
