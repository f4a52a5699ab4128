import Crypto
import FoundationEssentials
import SesameCore
import SesameProtocol

/// Logins by authorization code: with PKCE (RFC 7636) on a loopback redirect (RFC 8252) that
/// sesamectl listens on, or by a code an app obtained and hands over.
extension GenericOIDCProvider {
    // MARK: Authorization code with PKCE (RFC 7636) and a loopback redirect (RFC 8252)

    public func startAuthorizationCodeLogin(redirectURI: String, scopes: [String]?) async throws(ProviderError)
        -> AuthorizationRequest
    {
        let endpoint = try await endpoint(.authorizationEndpoint, for: "a browser login")
        let scopes = scopes ?? configuration.scopes
        // An ID token, and so a nonce to bind it to, comes only with `openid` (OIDC Core §3.1.2.1).
        return try authorizationRequest(
            endpoint,
            redirectURI: redirectURI,
            scopes: scopes,
            pkce: true,
            nonce: scopes.contains("openid") || configuration.kind == .oidc
        )
    }

    /// An authorization request (RFC 6749 §4.1.1) with a fresh state, and PKCE (RFC 7636 §4.3)
    /// and a nonce when asked for, plus the file's `authorization_parameters`.
    func authorizationRequest(_ endpoint: String, redirectURI: String, scopes: [String], pkce: Bool, nonce: Bool)
        throws(ProviderError) -> AuthorizationRequest
    {
        guard var url = URLComponents(string: endpoint) else {
            throw .invalidResponse("the authorization endpoint is not a URL")
        }
        let request = AuthorizationRequest(
            url: "",
            state: Self.randomToken(),
            redirectURI: redirectURI,
            codeVerifier: pkce ? Self.randomToken() : "",
            nonce: nonce ? Self.randomToken() : "",
            scopes: scopes
        )
        var items = [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: configuration.clientID),
            URLQueryItem(name: "redirect_uri", value: redirectURI),
            URLQueryItem(name: "state", value: request.state),
        ]
        if !scopes.isEmpty { items.append(URLQueryItem(name: "scope", value: scopes.joined(separator: " "))) }
        if nonce { items.append(URLQueryItem(name: "nonce", value: request.nonce)) }
        if pkce {
            let challenge = Data(SHA256.hash(data: Data(request.codeVerifier.utf8))).base64URLEncoded
            items.append(URLQueryItem(name: "code_challenge", value: challenge))
            items.append(URLQueryItem(name: "code_challenge_method", value: "S256"))
        }
        // The provider file's extras, never one of those that guard the login.
        items += configuration.authorizationParameters.sorted { $0.key < $1.key }
            .filter { !ProviderConfiguration.reservedAuthorizationParameters.contains($0.key) }
            .map { URLQueryItem(name: $0.key, value: $0.value) }
        url.queryItems = (url.queryItems ?? []) + items
        guard let text = url.string else { throw .invalidResponse("the authorization endpoint is not a URL") }
        var result = request
        result.url = text
        return result
    }

    public func finishAuthorizationCodeLogin(_ request: AuthorizationRequest, code: String) async throws(ProviderError)
        -> ProviderLogin
    {
        // The provider issued the code: what it says anywhere in this exchange may repeat it.
        try await OAuthHTTP.redacting([code, request.codeVerifier]) { () async throws(ProviderError) in
            var fields = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", request.redirectURI)]
            if !request.codeVerifier.isEmpty { fields.append(("code_verifier", request.codeVerifier)) }
            let tokens = try await tokenRequest(fields)
            return try await login(tokens, scopes: request.scopes, nonce: request.nonce.isEmpty ? nil : request.nonce)
        }
    }

    // MARK: Code handover

    /// Exchanges a code an app obtained, with what its request was bound to (RFC 6749 §4.1.3).
    public func redeemCode(_ handover: HandedOverCode) async throws(ProviderError) -> ProviderLogin {
        // The provider issued the code: what it says anywhere in this exchange may repeat it.
        let secrets = [handover.code] + (handover.codeVerifier.map { [$0] } ?? [])
        return try await OAuthHTTP.redacting(secrets) { () async throws(ProviderError) in
            // RFC 6749 §4.1.3: redirect_uri is required when the authorization request named one.
            var fields = [("grant_type", "authorization_code"), ("code", handover.code)]
            if let redirect = handover.redirectURI { fields.append(("redirect_uri", redirect)) }
            if let verifier = handover.codeVerifier { fields.append(("code_verifier", verifier)) }
            let tokens = try await tokenRequest(fields)
            // The app chose the nonce, if any; the ID token's signature, issuer and audience still count.
            return try await login(tokens, scopes: configuration.scopes, nonce: nil)
        }
    }
}
