import SesameCore

/// The reply of a login that ends in an account: `CompleteLogin`, `ImportTokens`, `RedeemCode`.
public struct LoggedInReply: Sendable, Codable, Hashable {
    /// The account, new or renewed.
    public var account: Account
    /// What became of the grant the login replaced, when it renewed an account that held one.
    public var replacedGrant: ReplacedGrant?
    /// Creates the reply.
    public init(account: Account, replacedGrant: ReplacedGrant? = nil) {
        self.account = account
        self.replacedGrant = replacedGrant
    }
}

/// The grant a second login of the same person replaced: revoked at the provider, or not (why,
/// and whether sesamed keeps it to try again).
public struct ReplacedGrant: Sendable, Codable, Hashable {
    /// The provider confirmed the revocation.
    public var revokedRemotely: Bool
    /// Why it was not revoked.
    public var notRevokedReason: String?
    /// sesamed keeps the grant and tries again.
    public var retrying: Bool
    /// Creates the outcome.
    public init(revokedRemotely: Bool, notRevokedReason: String?, retrying: Bool) {
        self.revokedRemotely = revokedRemotely
        self.notRevokedReason = notRevokedReason
        self.retrying = retrying
    }
}
