import FoundationEssentials

/// How large each part of an account may be. Every local user may create accounts, so each
/// field has a bound: together with the per-user account limit they bound what one user can
/// make the store, the engine and every List reply carry.
public enum AccountFieldLimits {
    /// An ID token; real ones are a few kilobytes.
    public static let idToken = 16384
    /// `token_type`, e.g. `Bearer` (RFC 6749 §7.1).
    public static let tokenType = 64
    /// A display name, as given or as the provider named the person (the daemon shortens
    /// names to 200 characters before they get here; escapes may make those 2,000 bytes).
    public static let displayName = 2048
    /// How many scopes, and the size of each (RFC 6749 §3.3 scope tokens).
    public static let scopes = 64
    /// The size of one scope.
    public static let scope = 256
    /// The earliest and latest expiry times accepted: an `expiresIn` of years beyond any real
    /// token's lifetime is refused rather than shown as a date thousands of years ahead.
    public static let earliestExpiry = Date(timeIntervalSince1970: 946_684_800)
    /// See `earliestExpiry`.
    public static let latestExpiry = Date(timeIntervalSince1970: 7_258_118_400)

    /// `received` held to these bounds without refusing it, for a provider's refresh answer
    /// (refusing it could drop a rotated refresh token, the only copy of the grant): what is
    /// out of bounds is replaced by what `held` had, and an implausible expiry is forgotten.
    static func bounded(_ received: TokenSet, keeping held: TokenSet) -> TokenSet {
        var tokens = received
        if !fits(idToken: tokens.idToken) { tokens.idToken = held.idToken }
        if !fits(tokenType: tokens.tokenType) { tokens.tokenType = held.tokenType }
        if !fits(scopes: tokens.scopes) { tokens.scopes = held.scopes }
        if !fits(expiry: tokens.accessTokenExpiresAt) { tokens.accessTokenExpiresAt = nil }
        if !fits(expiry: tokens.refreshTokenExpiresAt) { tokens.refreshTokenExpiresAt = nil }
        return tokens
    }

    /// Whether an ID token, if any, is within its bound.
    static func fits(idToken: String?) -> Bool { (idToken?.utf8.count ?? 0) <= Self.idToken }

    /// Whether a token type is within its bound.
    static func fits(tokenType: String) -> Bool { (1...Self.tokenType).contains(tokenType.utf8.count) }

    /// Whether a scope list is within its bounds.
    static func fits(scopes: [String]) -> Bool {
        scopes.count <= Self.scopes && scopes.allSatisfy { (1...Self.scope).contains($0.utf8.count) }
    }

    /// Whether an expiry time, if any, is plausible.
    static func fits(expiry: Date?) -> Bool { expiry.map { (earliestExpiry...latestExpiry).contains($0) } ?? true }
}
