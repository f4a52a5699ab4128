import FoundationEssentials

/// One login session the daemon owns, without any token material: safe to show to anyone who
/// may observe the account.
public struct Account: Sendable, Codable, Hashable, Identifiable {
    /// The daemon-assigned identifier, stable for the account's life.
    public var id: String
    /// The name its owner chose (`sesamectl rename`, `login --name`), unique among the owner's
    /// accounts and accepted wherever the id is; nil when none was chosen.
    public var name: String?
    /// The configured provider the account logged in with, e.g. `google`.
    public var provider: String
    /// The uid of the process that created the account; it owns it.
    public var ownerUID: UInt32
    /// The provider's stable subject identifier for the person.
    public var subject: String
    /// A name to show people, when the provider gave one.
    public var displayName: String?
    /// The scopes granted with the current tokens.
    public var scopes: [String]
    /// Where the session stands.
    public var state: SessionState
    /// When the current access token expires, if known.
    public var accessTokenExpiresAt: Date?
    /// When the current refresh token expires, if known.
    public var refreshTokenExpiresAt: Date?
    /// When the account was first created.
    public var createdAt: Date
    /// When the account last changed.
    public var updatedAt: Date
    /// When a refresh last brought new tokens; nil before the first.
    public var lastRefreshAt: Date?
    /// When sesamed plans to refresh next, ahead of expiry or to retry a failure; nil when it
    /// refreshes only on demand.
    public var nextRefreshAt: Date?
    /// Why the last refresh failed or the session came to need a login, in sesamed's own words
    /// (never token material or the provider's free text); kept after a later success, as
    /// history, with `lastErrorAt`.
    public var lastError: String?
    /// When `lastError` happened.
    public var lastErrorAt: Date?

    private enum CodingKeys: String, CodingKey {
        case id, name, provider, subject, displayName, scopes, state
        case accessTokenExpiresAt, refreshTokenExpiresAt, createdAt, updatedAt
        case lastRefreshAt, nextRefreshAt, lastError, lastErrorAt
        case ownerUID = "owner"
    }

    /// Creates an account record.
    public init(
        id: String,
        provider: String,
        ownerUID: UInt32,
        subject: String,
        displayName: String? = nil,
        scopes: [String] = [],
        state: SessionState,
        accessTokenExpiresAt: Date? = nil,
        refreshTokenExpiresAt: Date? = nil,
        createdAt: Date,
        updatedAt: Date? = nil
    ) {
        self.id = id
        self.provider = provider
        self.ownerUID = ownerUID
        self.subject = subject
        self.displayName = displayName
        self.scopes = scopes
        self.state = state
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.refreshTokenExpiresAt = refreshTokenExpiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }
}
