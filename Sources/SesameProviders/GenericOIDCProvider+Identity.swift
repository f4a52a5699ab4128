import FoundationEssentials
import SesameCore

/// Who logged in, and whether later answers still speak of the same person: the ID token when
/// there is one that can be checked, else the userinfo endpoint.
extension GenericOIDCProvider {
    /// The tokens of a login and who they belong to. When who cannot be told, the grant the
    /// provider just issued is revoked rather than left valid with nobody holding it.
    func login(_ body: TokenResponse, scopes: [String], nonce: String?) async throws(ProviderError) -> ProviderLogin {
        let tokens = body.tokenSet(now: http.clock.now, requestedScopes: scopes)
        do throws(ProviderError) {
            let identity = try await identify(body, nonce: nonce)
            guard !identity.subject.isEmpty, identity.subject.utf8.count <= 255 else {
                throw ProviderError.invalidResponse("the provider named the person with an empty or oversized subject")
            }
            return ProviderLogin(
                tokens: tokens,
                subject: identity.subject,
                displayName: identity.displayName.map(ProviderText.displayName)
            )
        } catch {
            try? await revokeIssued(tokens)
            throw error
        }
    }

    /// The person a token response is about. An ID token is checked when the provider's keys
    /// are known; without one (the device grant has none, RFC 8628 §3.5; nor has a login that
    /// was not granted `openid`) the userinfo endpoint says (OpenID Connect Core §5.3).
    func identify(_ body: TokenResponse, nonce: String?) async throws(ProviderError) -> ProviderIdentity {
        if let idToken = body.idToken, let validator = try await discovery.validatorIfConfigured() {
            let claims = try await validator.validate(idToken, nonce: nonce)
            return ProviderIdentity(
                subject: claims.subject.value,
                displayName: claims.name ?? claims.preferredUsername ?? claims.nickname ?? claims.email
            )
        }
        if let profile { return try await profile(body.accessToken) }
        guard let userinfo = try await discovery.endpoints().userinfoEndpoint else {
            let why =
                body.idToken == nil
                ? "the provider answered without an ID token"
                : "the ID token cannot be checked (set issuer, or endpoints.jwks, in the provider file)"
            throw .misconfigured(
                "sesamed cannot tell who logged in: \(why), and it names no userinfo endpoint; "
                    + "set endpoints.userinfo in the provider file"
            )
        }
        return try await self.userinfo(userinfo, accessToken: body.accessToken)
    }

    /// Asks the userinfo endpoint who the access token belongs to (OpenID Connect Core §5.3).
    private func userinfo(_ endpoint: String, accessToken: String) async throws(ProviderError) -> ProviderIdentity {
        let response = try await http.get(endpoint, bearer: accessToken)
        if response.status.code == 200,
            response.headers.first(name: "Content-Type")?.lowercased().hasPrefix("application/jwt") == true
        {
            throw .invalidResponse(
                "the userinfo endpoint answered a signed or encrypted JWT, which sesamed does not read"
            )
        }
        let claims = try OAuthHTTP.classify(response, as: UserinfoClaims.self)
        // §5.3.2: `sub` is required.
        guard !claims.sub.isEmpty else { throw .invalidResponse("the userinfo answer has an empty sub") }
        return ProviderIdentity(
            subject: claims.sub,
            displayName: claims.name ?? claims.preferredUsername ?? claims.email
        )
    }

    /// Checks handed-over tokens: an ID token must be about `subject`; without one, the
    /// provider's profile API or its userinfo endpoint (OpenID Connect Core §5.3) must say the
    /// access token is `subject`'s, so an app cannot file one person's token under another's
    /// name. A provider with neither cannot say whose a token is: the subject is taken as given.
    public func verifyHandedOver(_ tokens: TokenSet, subject: String) async throws(ProviderError) {
        if let idToken = tokens.idToken { return try await verifyHandedOver(idToken: idToken, subject: subject) }
        let identity: ProviderIdentity
        if let profile {
            identity = try await profile(tokens.accessToken)
        } else if let userinfo = try await discovery.endpoints().userinfoEndpoint {
            identity = try await self.userinfo(userinfo, accessToken: tokens.accessToken)
        } else {
            return
        }
        guard identity.subject == subject else {
            throw .invalidResponse("the access token belongs to another subject than the one given")
        }
    }

    /// Checks a handed-over ID token: the provider's, for this client, about `subject`.
    func verifyHandedOver(idToken: String, subject: String) async throws(ProviderError) {
        let claims = try await discovery.validator().validate(idToken, nonce: nil, checkExpiry: false)
        guard claims.subject.value == subject else {
            throw .invalidResponse("the ID token is about another subject than the one given")
        }
    }

    // MARK: Refresh (RFC 6749 §6)

    public func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        guard let refreshToken = tokens.refreshToken else { throw .unavailable }
        let body: TokenResponse
        do throws(ProviderError) {
            body = try await Self.refreshGrant(refreshToken, of: tokens, through: tokenRequest)
        } catch {
            throw error.refreshFailure
        }
        return try await refreshed(body, account: account, tokens: tokens)
    }

    /// The refresh grant (RFC 6749 §6), posted through the adapter's own token request. It
    /// carries only the refresh token, but the provider issued both tokens and its words on a
    /// refusal may quote either, so both are cut out of them.
    static func refreshGrant(
        _ refreshToken: String,
        of tokens: TokenSet,
        through tokenRequest: ([(String, String)]) async throws(ProviderError) -> TokenResponse
    ) async throws(ProviderError) -> TokenResponse {
        try await OAuthHTTP.redacting(tokens.secrets) { () async throws(ProviderError) in
            try await tokenRequest([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
        }
    }

    /// The tokens a refresh answer carries, once its ID token, if any, checks out (OpenID
    /// Connect Core §12.2). A refresh token the answer leaves out stays the old one (RFC 6749 §6).
    func refreshed(_ body: TokenResponse, account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        let refreshToken = tokens.refreshToken
        var fresh = body.tokenSet(now: http.clock.now, requestedScopes: tokens.scopes)
        guard let idToken = body.idToken else { return fresh }
        do throws(ProviderError) {
            // OpenID Connect Core §12.2: a refreshed ID token is about the same person, for this client.
            let claims = try await discovery.validator().validate(idToken, nonce: nil)
            guard claims.subject.value == account.subject else {
                throw ProviderError.invalidResponse("the refreshed ID token is about another subject")
            }
            return fresh
        } catch .invalidResponse(let reason) {
            // The provider issued these tokens and may have rotated the refresh token, so the old
            // one is likely dead too: the session cannot go on. What was issued is revoked rather
            // than left valid at the provider with nobody holding it.
            fresh.refreshToken = fresh.refreshToken ?? refreshToken
            let revoked = (try? await revokeIssued(fresh)) != nil
            throw .needsLogin(
                reason: "the provider's refresh answer was refused (\(reason)); the tokens it issued "
                    + (revoked ? "were revoked" : "could not be revoked")
            )
        } catch {
            // The ID token cannot be checked now (keys unreachable, none configured). The new
            // tokens may be the only copy of the grant: keep them, with the ID token checked before.
            fresh.idToken = tokens.idToken
            return fresh
        }
    }
}

/// The standard claims of a userinfo answer that Sesame reads (OpenID Connect Core §5.1).
struct UserinfoClaims: Decodable {
    var sub: String
    var name: String?
    var email: String?
    var preferredUsername: String?

    enum CodingKeys: String, CodingKey {
        case sub, name, email
        case preferredUsername = "preferred_username"
    }
}

extension ProviderError {
    /// What a failed refresh means for the session, in one place.
    var refreshFailure: RefreshError {
        switch self {
        case .transient(let reason, let retryAfter): .transient(reason: reason, retryAfter: retryAfter)
        case .rejected(let error, _, let code):
            .needsLogin(reason: "the provider refused the refresh (\(error)\(code.map { ", \($0)" } ?? ""))")
        case .accessDenied, .expired: .needsLogin(reason: "\(self)")
        case .unsupported: .unavailable
        // Configuration errors do not pass by themselves: retry at the slowest pace, saying why.
        case .misconfigured(let reason), .untrustedCertificate(let reason):
            .transient(reason: reason, retryAfter: .seconds(86400))
        case .invalidResponse(let reason): .invalidResponse(reason: reason)
        }
    }
}
