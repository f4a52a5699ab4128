/// Why an engine command was refused. Each maps to one named Varlink error; none carries tokens.
public enum SessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No account with this id exists (or the caller may not see it).
    case noSuchAccount(String)
    /// The session cannot give tokens until someone logs in again.
    case needsLogin(String)
    /// The access token has expired and cannot be refreshed right now.
    case tokenExpired(String)
    /// A refresh failed for a reason that may pass.
    case refreshFailed(account: String, reason: String)
    /// The tokens or account details handed in are not acceptable.
    case invalidTokens(String)
    /// The change could not be persisted, so it was not made.
    case storeFailed(String)
    /// The state machine does not allow this change.
    case illegalTransition(IllegalTransitionError)
    /// The owner already has as many accounts as one user may.
    case tooManyAccounts(limit: Int)
    /// A name an account cannot have: not in the form names take, or already the owner's
    /// name for another account; `reason` says which.
    case invalidName(name: String, reason: String)
    /// The account's provider cannot hand out a narrowed token (another scope, audience or
    /// resource) at all; `reason` says what is missing.
    case narrowingUnsupported(account: String, reason: String)
    /// The narrowed token asked for was refused: by the provider (an audience it does not
    /// know), or by sesamed before asking (a scope beyond the grant); `reason` says which.
    case narrowingRefused(account: String, reason: String)

    public var description: String {
        switch self {
        case .noSuchAccount(let id): "no account \(id)"
        case .needsLogin(let id): "account \(id) needs a new login"
        case .tokenExpired(let id): "the access token of \(id) has expired and cannot be refreshed now"
        case .refreshFailed(let id, let reason): "refreshing \(id) failed: \(reason)"
        case .invalidTokens(let reason): "invalid tokens: \(reason)"
        case .storeFailed(let reason): "the change could not be saved: \(reason)"
        case .illegalTransition(let transition): "\(transition)"
        case .tooManyAccounts(let limit): "the owner already has \(limit) accounts, as many as one user may"
        case .invalidName(let name, let reason): "the name '\(name)' cannot be used: \(reason)"
        case .narrowingUnsupported(let id, let reason): "\(id) cannot have a narrowed token: \(reason)"
        // The reason says who refused: the provider, or sesamed before asking it.
        case .narrowingRefused(let id, let reason): "no narrowed token for \(id): \(reason)"
        }
    }
}
