import FoundationEssentials

/// The tokens of one login session. Its descriptions never show token text, so it can be
/// logged, interpolated or dumped by accident without leaking anything.
public struct TokenSet: Sendable, Hashable, Codable {
    /// The bearer token programs send to APIs.
    public var accessToken: String
    /// The token that obtains new access tokens, when the provider issued one.
    public var refreshToken: String?
    /// The OpenID Connect ID token, when there was one.
    public var idToken: String?
    /// How the access token is presented, almost always `Bearer`.
    public var tokenType: String
    /// When the access token stops working, if the provider said.
    public var accessTokenExpiresAt: Date?
    /// When the refresh token stops working, if the provider said.
    public var refreshTokenExpiresAt: Date?
    /// The scopes the tokens were granted for.
    public var scopes: [String]

    /// Creates a token set.
    public init(
        accessToken: String,
        refreshToken: String? = nil,
        idToken: String? = nil,
        tokenType: String = "Bearer",
        accessTokenExpiresAt: Date? = nil,
        refreshTokenExpiresAt: Date? = nil,
        scopes: [String] = []
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.tokenType = tokenType
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.refreshTokenExpiresAt = refreshTokenExpiresAt
        self.scopes = scopes
    }

    /// What a replaced grant keeps until it is revoked: its tokens and their expiry, not the ID
    /// token or the scopes, which no revocation reads.
    public var keptForRevocation: TokenSet {
        var kept = self
        kept.idToken = nil
        kept.scopes = []
        return kept
    }

    /// Whether the access token has expired at `now`.
    public func accessTokenHasExpired(at now: Date) -> Bool {
        accessTokenExpiresAt.map { $0 <= now } ?? false
    }
}

extension TokenSet: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        let expiry = accessTokenExpiresAt.map { " expiring \($0)" } ?? ""
        return "TokenSet(\(tokenType), refresh token: \(refreshToken == nil ? "no" : "yes")\(expiry))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description])
    }
}
