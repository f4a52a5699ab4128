import FoundationEssentials
import SesameCore

/// OAuth 2.0 Token Exchange (RFC 8693): a token for fewer scopes, another audience or a resource,
/// had for the account's access token. The refresh token is never sent, so the grant behind the
/// account cannot be narrowed by it (RFC 6749 §6 says a refresh asking for less keeps the refresh
/// token's scope, but servers differ: django-oauth-toolkit ties the next refresh to the narrowed
/// scope).
extension GenericOIDCProvider {
    /// The grant type of a token exchange (RFC 8693 §2.1).
    static let tokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// The token type of an access token (RFC 8693 §3).
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    public func exchange(_ account: Account, accessToken: String, for narrowing: TokenNarrowing)
        async throws(NarrowingError) -> TokenSet
    {
        do throws(ProviderError) {
            guard discovery.discovers else {
                throw .unsupported("token exchange that sesamed can know of: its provider file turns discovery off")
            }
            guard try await discovery.supports(grant: Self.tokenExchangeGrant) else {
                throw .unsupported("token exchange: its discovery document does not list \(Self.tokenExchangeGrant)")
            }
            var fields = [
                ("grant_type", Self.tokenExchangeGrant), ("subject_token", accessToken),
                ("subject_token_type", Self.accessTokenType), ("requested_token_type", Self.accessTokenType),
            ]
            if !narrowing.scopes.isEmpty { fields.append(("scope", narrowing.scopes.joined(separator: " "))) }
            if let audience = narrowing.audience { fields.append(("audience", audience)) }
            if let resource = narrowing.resource { fields.append(("resource", resource)) }
            let response = try await post(try await tokenEndpoint(), fields, timeout: configuration.requestTimeout)
            return try Self.exchanged(
                try OAuthHTTP.classify(response, as: ExchangeResponse.self),
                asked: narrowing,
                now: http.clock.now
            )
        } catch {
            throw error.narrowingFailure
        }
    }

    /// The token an exchange answer carries (RFC 8693 §2.2.1), once it is what was asked for.
    static func exchanged(_ answer: ExchangeResponse, asked: TokenNarrowing, now: Date) throws(ProviderError)
        -> TokenSet
    {
        guard answer.issuedTokenType == accessTokenType else {
            throw .invalidResponse("the exchange issued no access token (issued_token_type is not \(accessTokenType))")
        }
        // §2.2.1: `scope` may be left out only when it is the one asked for.
        let scopes = answer.scope.map { $0.split(separator: " ").map(String.init) } ?? asked.scopes
        if !asked.scopes.isEmpty, let extra = scopes.first(where: { !asked.scopes.contains($0) }) {
            throw .invalidResponse(
                "the exchanged token carries the scope \(ProviderText.sanitized(extra, limit: 60)), which was not asked for"
            )
        }
        return TokenSet(
            accessToken: answer.accessToken,
            tokenType: answer.tokenType,
            accessTokenExpiresAt: answer.expiresIn.map { now.addingTimeInterval(TimeInterval($0)) },
            scopes: scopes
        )
    }
}

/// A token exchange answer (RFC 8693 §2.2.1). A refresh token in it is not read: the account's
/// own refresh token is the only one sesamed keeps. Its descriptions never show the token.
struct ExchangeResponse: Decodable, CustomStringConvertible {
    var accessToken: String
    var issuedTokenType: String
    var tokenType: String
    var expiresIn: Int?
    var scope: String?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case issuedTokenType = "issued_token_type"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case scope
    }

    var description: String { "ExchangeResponse(\(issuedTokenType), expires in \(expiresIn.map(String.init) ?? "?"))" }
}

extension ProviderError {
    /// What a failed exchange means for the caller: the provider cannot exchange at all, it
    /// refused this one, or it failed.
    var narrowingFailure: NarrowingError {
        switch self {
        case .unsupported(let what): .unsupported(reason: "the provider does not support \(what)")
        case .misconfigured(let reason), .untrustedCertificate(let reason): .failed(reason: reason)
        // RFC 8693 §2.2.2 and RFC 6749 §5.2: what was asked for is not allowed.
        case .rejected(let error, _, _) where ["invalid_scope", "invalid_target"].contains(error):
            .refused(reason: "\(self)")
        // RFC 6749 §5.2: this client may not use the grant at all, whatever is asked.
        case .rejected(let error, _, _) where ["unsupported_grant_type", "unauthorized_client"].contains(error):
            .unsupported(reason: "the provider does not allow sesamed's client token exchange (\(error))")
        default: .failed(reason: "\(self)")
        }
    }
}
