import FoundationEssentials

/// Obtains new tokens for an account; the OAuth engine implements it per provider.
public protocol TokenRefresher: Sendable {
    /// Exchanges `tokens` (their refresh token) for new ones.
    func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet
    /// Exchanges the account's current `accessToken` for one narrowed as asked (RFC 8693),
    /// leaving its grant and refresh token alone. The answer carries no refresh token.
    func exchange(_ account: Account, accessToken: String, for narrowing: TokenNarrowing)
        async throws(NarrowingError) -> TokenSet
    /// Revokes `grant`, a grant of the account's that a new login replaced, at its provider.
    func revoke(_ account: Account, grant: TokenSet) async throws(RevocationError)
}

extension TokenRefresher {
    /// No narrowed tokens: what a refresher offers unless it implements token exchange.
    public func exchange(_ account: Account, accessToken: String, for narrowing: TokenNarrowing)
        async throws(NarrowingError) -> TokenSet
    {
        throw .unsupported(reason: "\(account.provider) offers no token exchange (RFC 8693)")
    }
}

extension TokenRefresher {
    /// No revocation: what a refresher offers unless it implements one.
    public func revoke(_ account: Account, grant: TokenSet) async throws(RevocationError) {
        throw RevocationError(reason: "\(account.provider) offers no revocation", isFinal: true)
    }
}

/// The words of a refresh sesamed holds back by its provider's rule (`RefreshError.paced`):
/// who holds it, which rule, and until when. Clients recognise them by their start.
public enum RefreshHold {
    /// How every such reason begins.
    public static let prefix = "sesamed holds this refresh back"

    /// Why a refresh is held until `until` by `rule` (the provider's rule in a few words).
    public static func reason(until: Date, rule: String) -> String {
        "\(prefix) until \(until.formatted(.iso8601)), by the provider's rule: \(rule)"
    }
}

/// Why a grant was not revoked, in sesamed's words.
public struct RevocationError: Error, Sendable, Hashable {
    /// Why.
    public var reason: String
    /// Whether trying again cannot help (the provider offers no revocation, or revoking the
    /// grant would end the account's current one too).
    public var isFinal: Bool

    /// Creates a failure.
    public init(reason: String, isFinal: Bool) {
        self.reason = reason
        self.isFinal = isFinal
    }
}

/// Why a refresh did not produce tokens, classified by what the engine must do next.
public enum RefreshError: Error, Sendable, Hashable {
    /// No refresh is possible here (no refresher for the provider, or no refresh token).
    case unavailable
    /// A failure that may pass (timeout, 5xx, 429, `temporarily_unavailable`); retry after the delay.
    case transient(reason: String, retryAfter: Duration)
    /// The grant is no longer good (`invalid_grant`, refresh token expired): log in again.
    case needsLogin(reason: String)
    /// The provider says the grant was revoked: the session is over.
    case revoked(reason: String)
    /// The provider's own rules allow no refresh of this account before `until` (`reason` says
    /// which rule): nothing failed, and the tokens held are kept and handed out while valid.
    case paced(until: Date, reason: String)
    /// The provider answered something invalid (malformed JSON, a bad signature, a token for
    /// another client): nothing about the session changes because of it.
    case invalidResponse(reason: String)
}

/// A refresher for when none is configured: every refresh is `unavailable`.
public struct NoTokenRefresher: TokenRefresher {
    /// Creates the refresher that never refreshes.
    public init() {}

    public func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        throw .unavailable
    }
}
