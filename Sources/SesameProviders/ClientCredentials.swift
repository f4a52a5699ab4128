import FoundationEssentials
import SesameCore

/// How a client proves who it is at the token endpoint (RFC 6749 §2.3.1): with HTTP Basic, or
/// with `client_id` and `client_secret` in the form body, the way Kakao, Naver, Google and Apple
/// document it. The secret may be made per request (Apple's is a signed JWT that expires).
struct ClientCredentials: Sendable {
    /// Where the secret goes.
    enum Placement: Sendable {
        /// `Authorization: Basic`, which every server must accept (RFC 6749 §2.3.1).
        case basic
        /// `client_id` and `client_secret` form fields.
        case body
    }

    var placement: Placement
    /// The client secret now, or nil for a public client.
    var secret: @Sendable () async throws(ProviderError) -> String?
    /// What to check when the provider refuses these credentials (`invalid_client`).
    var refusalAdvice = "check client_id and the client secret in the provider file"

    /// The configured secret, presented as `placement` says.
    static func configured(_ configuration: ProviderConfiguration, placement: Placement) -> ClientCredentials {
        let secret = configuration.clientSecret
        return ClientCredentials(placement: placement, secret: { () async throws(ProviderError) in secret })
    }

    /// A generic provider's: HTTP Basic when there is a secret.
    static func standard(_ configuration: ProviderConfiguration) -> ClientCredentials {
        configured(configuration, placement: .basic)
    }

    /// The form fields and Basic credentials a request carries. A public client names itself
    /// in the form (RFC 6749 §3.2.1).
    func present(clientID: String) async throws(ProviderError) -> (fields: [(String, String)], basic: (String, String)?)
    {
        guard let secret = try await secret() else { return ([("client_id", clientID)], nil) }
        switch placement {
        case .basic: return ([], (clientID, secret))
        case .body: return ([("client_id", clientID), ("client_secret", secret)], nil)
        }
    }
}

/// Who an access token belongs to, asked of a provider's own profile API (Kakao's user API,
/// Naver's profile API) where OpenID Connect's userinfo is not offered.
typealias ProfileLookup = @Sendable (_ accessToken: String) async throws(ProviderError) -> ProviderIdentity

/// How a provider without RFC 7009 revocation ends a grant (Kakao's logout API, Naver's
/// grant_type=delete), given the generic provider that speaks for it.
typealias Revoker = @Sendable (_ base: GenericOIDCProvider, _ tokens: TokenSet) async throws(ProviderError) -> Void

/// A person as a provider names them: the stable subject, and a name to show.
struct ProviderIdentity: Sendable {
    var subject: String
    var displayName: String?
}
