/// Where an account's login session stands.
public enum SessionState: String, Sendable, Codable, Hashable, CaseIterable {
    /// The access token is valid.
    case active
    /// A refresh is in flight; the previous access token may still be valid.
    case refreshing
    /// The access token is past its expiry, but a refresh is still possible.
    case expired
    /// No refresh is possible (revoked, `invalid_grant`, refresh token expired); only a new login helps.
    case needsLogin
    /// The session was ended; the account keeps no tokens.
    case loggedOut
}
