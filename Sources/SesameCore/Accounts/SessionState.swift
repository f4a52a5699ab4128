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

    /// Whether the state machine allows going from this state to `next`. Staying put is not a
    /// transition; a new login (or import) may start over from any state.
    public func allows(_ next: SessionState) -> Bool {
        switch (self, next) {
        case (_, .active) where self != .active:
            return true
        case (.active, .refreshing), (.expired, .refreshing):
            return true
        case (.active, .expired), (.refreshing, .expired):
            return true
        case (.active, .needsLogin), (.refreshing, .needsLogin), (.expired, .needsLogin):
            return true
        case (.active, .loggedOut), (.refreshing, .loggedOut), (.expired, .loggedOut), (.needsLogin, .loggedOut):
            return true
        default:
            return false
        }
    }

    /// Whether the account holds tokens a refresh could start from.
    public var canRefresh: Bool {
        self == .active || self == .expired
    }
}

/// A state change the state machine does not allow; nothing was changed.
public struct IllegalTransitionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The account the change was asked for.
    public var account: String
    /// The state the account was in.
    public var from: SessionState
    /// The state that was asked for.
    public var to: SessionState

    /// Creates the error for the refused change of `account` from `from` to `to`.
    public init(account: String, from: SessionState, to: SessionState) {
        self.account = account
        self.from = from
        self.to = to
    }

    public var description: String { "account \(account) cannot go from \(from.rawValue) to \(to.rawValue)" }
}
