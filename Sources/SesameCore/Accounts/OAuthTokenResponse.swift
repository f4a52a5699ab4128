import FoundationEssentials

/// A token response (RFC 6749 §5.1) as providers send it: what sesamed reads from a token
/// endpoint and `sesamectl import` from an app, one reader for both. Its descriptions never show
/// the tokens.
public struct OAuthTokenResponse: Sendable, Decodable, CustomStringConvertible {
    /// `access_token`.
    public var accessToken: String
    /// `token_type`; RFC 6749 requires it, but an app's hand-over may leave it out ("Bearer").
    public var tokenType: String?
    /// `expires_in`, in seconds.
    public var expiresIn: Int?
    /// `refresh_token`.
    public var refreshToken: String?
    /// `refresh_token_expires_in` (Kakao, Microsoft).
    public var refreshTokenExpiresIn: Int?
    /// Keycloak's `refresh_expires_in`: its session's idle limit, or 0 for an offline token that
    /// does not lapse, so it is not the refresh token's end (an app's hand-over may still mean it so).
    public var keycloakRefreshExpiresIn: Int?
    /// `id_token` (OpenID Connect Core §3.1.3.3).
    public var idToken: String?
    /// `scope`, space-separated.
    public var scope: String?

    /// A response with these fields.
    public init(
        accessToken: String,
        tokenType: String? = "Bearer",
        expiresIn: Int? = nil,
        refreshToken: String? = nil,
        refreshTokenExpiresIn: Int? = nil,
        idToken: String? = nil,
        scope: String? = nil
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.refreshTokenExpiresIn = refreshTokenExpiresIn
        self.idToken = idToken
        self.scope = scope
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case refreshTokenExpiresIn = "refresh_token_expires_in"
        case keycloakRefreshExpiresIn = "refresh_expires_in"
        case idToken = "id_token"
        case scope
    }

    /// Reads the response; lifetimes may be JSON numbers or, as Naver sends them, strings of digits.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decode(String.self, forKey: .accessToken)
        tokenType = try container.decodeIfPresent(String.self, forKey: .tokenType)
        expiresIn = try container.decodeIfPresent(LenientInteger.self, forKey: .expiresIn)?.value
        refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        // A refresh token's lifetime of zero or less says it does not lapse (Keycloak's offline
        // tokens), not that it ends the moment it is issued.
        refreshTokenExpiresIn = try container.decodeIfPresent(LenientInteger.self, forKey: .refreshTokenExpiresIn)?
            .positive
        keycloakRefreshExpiresIn = try container.decodeIfPresent(
            LenientInteger.self,
            forKey: .keycloakRefreshExpiresIn
        )?.positive
        idToken = try container.decodeIfPresent(String.self, forKey: .idToken)
        scope = try container.decodeIfPresent(String.self, forKey: .scope)
    }

    /// The scopes the response names, split.
    public var scopes: [String]? { scope.map { $0.split(separator: " ").map(String.init) } }

    /// The response as the engine keeps it, with expiry computed from `now`; without a `scope`
    /// the provider granted what was asked (RFC 6749 §5.1).
    public func tokenSet(now: Date, requestedScopes: [String]) -> TokenSet {
        TokenSet(
            accessToken: accessToken,
            refreshToken: refreshToken,
            idToken: idToken,
            tokenType: tokenType ?? "Bearer",
            accessTokenExpiresAt: expiresIn.map { now.addingTimeInterval(TimeInterval($0)) },
            refreshTokenExpiresAt: refreshTokenExpiresIn.map { now.addingTimeInterval(TimeInterval($0)) },
            scopes: scopes ?? requestedScopes
        )
    }

    public var description: String {
        "OAuthTokenResponse(\(tokenType ?? "no type"), expires in \(expiresIn.map(String.init) ?? "?"))"
    }
}

/// A lifetime in seconds some providers send as a JSON string ("3600") rather than a number.
public struct LenientInteger: Sendable, Decodable {
    /// The number.
    public var value: Int
    /// The number when it is above zero.
    public var positive: Int? { value > 0 ? value : nil }

    /// Reads a JSON integer, or a string that holds only one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int.self) {
            value = number
        } else if let text = try? container.decode(String.self), let number = Int(text) {
            value = number
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an integer")
        }
    }
}
