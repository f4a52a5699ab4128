import FoundationEssentials

/// One change to a login session, as every subscriber that may see the account receives it.
/// It never carries token material.
public struct AuthEvent: Sendable, Codable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Codable, Hashable, CaseIterable {
        /// A login or import created or renewed the session.
        case loggedIn
        /// A refresh obtained new tokens.
        case tokenRefreshed
        /// The access token expires within the configured margin.
        case expiring
        /// The access token is past its expiry.
        case expired
        /// The refresh token expires within the configured margin and was not renewed: a new
        /// login is needed before `refreshTokenExpiresAt`.
        case refreshTokenExpiring
        /// A refresh failed for a reason that may pass; another attempt follows at `retryAt`.
        case refreshFailed
        /// Only a new login can restore the session.
        case needsLogin
        /// The session ended; `reason` says why.
        case loggedOut
        /// The account record itself was deleted.
        case accountRemoved
    }

    /// Why a session ended.
    public enum LogoutReason: String, Sendable, Codable, Hashable, CaseIterable {
        /// Someone asked for it (`Logout`).
        case user
        /// The provider revoked the grant.
        case revoked
        /// The refresh token ran out.
        case expired
        /// An administrator ended it.
        case admin
    }

    /// Grows by one with every event, across restarts; subscribers resume from it.
    public var sequence: UInt64
    /// When the event happened (wall clock).
    public var time: Date
    /// What happened.
    public var kind: Kind
    /// The account it happened to.
    public var account: String
    /// That account's provider.
    public var provider: String
    /// That account's owner uid.
    public var owner: UInt32
    /// The account's state after the event.
    public var state: SessionState
    /// When the account's access token expires, if known.
    public var accessTokenExpiresAt: Date?
    /// When the account's refresh token expires, if the provider said.
    public var refreshTokenExpiresAt: Date?
    /// For `loggedOut`: why.
    public var reason: LogoutReason?
    /// For `refreshFailed`: when the next attempt is due.
    public var retryAt: Date?
    /// For `loggedOut`: whether the provider confirmed the revocation (false: wiped locally only);
    /// for `loggedIn` of a login that replaced a grant: whether that grant was confirmed revoked.
    public var revokedRemotely: Bool?
    /// For `refreshFailed` and `needsLogin`: why, in sesamed's own words (never token material,
    /// never the provider's free text); for `loggedIn`: why the replaced grant was not revoked.
    public var detail: String?

    /// Creates an event about `account` as it is after the change.
    public init(
        sequence: UInt64,
        time: Date,
        kind: Kind,
        account: Account,
        reason: LogoutReason? = nil,
        retryAt: Date? = nil,
        revokedRemotely: Bool? = nil,
        detail: String? = nil
    ) {
        self.sequence = sequence
        self.time = time
        self.kind = kind
        self.account = account.id
        self.provider = account.provider
        self.owner = account.ownerUID
        self.state = account.state
        self.accessTokenExpiresAt = account.accessTokenExpiresAt
        self.refreshTokenExpiresAt = account.refreshTokenExpiresAt
        self.reason = reason
        self.retryAt = retryAt
        self.revokedRemotely = revokedRemotely
        self.detail = detail
    }
}

/// Which events a subscriber gets: those it asked for and may see. Nil means all on that axis.
public struct EventFilter: Sendable {
    /// Whether the subscriber may see the account with this id, provider and owner. It is asked
    /// for every event rather than once, so a changed access policy applies to live
    /// subscriptions at once.
    public typealias Visibility = @Sendable (_ account: String, _ provider: String, _ owner: UInt32) -> Bool

    /// Only events of these account ids.
    public var accounts: Set<String>?
    /// Only events of these kinds.
    public var kinds: Set<AuthEvent.Kind>?
    /// Only events of accounts the subscriber may see; nil for all.
    public var visibility: Visibility?

    /// Creates a filter; nil accepts everything on that axis.
    public init(accounts: Set<String>? = nil, kinds: Set<AuthEvent.Kind>? = nil, visibility: Visibility? = nil) {
        self.accounts = accounts
        self.kinds = kinds
        self.visibility = visibility
    }

    /// Whether `event` passes the filter.
    public func matches(_ event: AuthEvent) -> Bool {
        (accounts?.contains(event.account) ?? true) && (kinds?.contains(event.kind) ?? true)
            && (visibility?(event.account, event.provider, event.owner) ?? true)
    }

    /// Whether `account` is one the subscriber asked for and may see, for a resync.
    public func matches(_ account: Account) -> Bool {
        (accounts?.contains(account.id) ?? true)
            && (visibility?(account.id, account.provider, account.ownerUID) ?? true)
    }
}
