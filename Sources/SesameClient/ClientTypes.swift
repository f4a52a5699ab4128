import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire

// The contract's types (SesameProtocol), under the names programs know them by.

/// Tokens a program obtained itself, as it hands them to `importTokens`.
public typealias ImportedTokens = Tokens
/// An access token as `GetToken` hands it out.
public typealias AccessToken = GetTokenReply
/// What a device login asks the person to do.
public typealias DeviceVerification = Verification
/// Where to send the browser for an authorization-code login.
public typealias BrowserAuthorization = Authorization
/// What `logout` did.
public typealias LogoutResult = LogoutReply
/// A login's account, and what became of the grant it replaced (`replacedGrant`), if any.
public typealias LoggedIn = LoggedInReply
/// A configured provider, and how its accounts log in.
public typealias ProviderInfo = Provider
/// The ways sesamed can log an account in.
public typealias LoginFlow = SesameProtocol.LoginFlow
/// An authorization code an app or web page obtained, with what its request was bound to.
public typealias HandedOverCode = SesameProtocol.HandedOverCode

/// What `org.varlink.service.GetInfo` reports about the daemon: who makes it, its version, and
/// every interface it serves.
public typealias ServiceInfo = VarlinkServiceContract.Info

/// Progress of a login.
public enum LoginProgress: Sendable, Hashable {
    /// A device login: show this to the person; `.done` follows once they approved.
    case verification(DeviceVerification)
    /// An authorization-code login: send the browser here, then call `completeLogin` with the
    /// code the redirect carries. Nothing follows on this stream.
    case authorization(BrowserAuthorization)
    /// The account is logged in (and the grant it replaced, if any, revoked or kept to retry).
    case done(LoggedIn)
    /// While a device login polls: what troubles the provider, a short fixed sentence
    /// ("the provider answered 503; still trying"); nil once it has passed.
    case trouble(String?)

    /// Reads a reply of `Login`; nil for a kind of reply this version does not know.
    init?(_ reply: LoginReply) {
        if let verification = reply.verification {
            self = .verification(verification)
        } else if let authorization = reply.authorization {
            self = .authorization(authorization)
        } else if let account = reply.account {
            self = .done(LoggedIn(account: account, replacedGrant: reply.replacedGrant))
        } else if let trouble = reply.trouble {
            self = .trouble(trouble.isEmpty ? nil : trouble)
        } else {
            return nil
        }
    }
}

/// One reply of an event subscription.
public enum SubscriptionUpdate: Sendable, Hashable {
    /// The subscription is live: every event after `sequence` will arrive.
    case ready(sequence: UInt64)
    /// One change to a session.
    case event(AuthEvent)
    /// The full current state, sent when the missed events are no longer kept.
    case resync(sequence: UInt64, accounts: [Account])
    /// Only from `followEvents`: the connection was lost after `after` (nil: before any update);
    /// what follows comes from a new subscription that resumes there.
    case reconnecting(after: UInt64?)

    /// Reads a reply; nil for a kind of reply this version does not know, so older clients keep
    /// working against newer daemons.
    init?(_ reply: SubscribeReply) {
        if let ready = reply.ready {
            self = .ready(sequence: ready.sequence)
        } else if let event = reply.event {
            self = .event(event)
        } else if let resync = reply.resync {
            self = .resync(sequence: resync.sequence, accounts: resync.accounts)
        } else {
            return nil
        }
    }
}

/// A named error sesamed answered with, or a failure of the connection to it.
public enum SesameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An error of the session engine: no such account, needs login, expired, refresh failed, ….
    case session(SessionError)
    /// The subscriber fell behind and was cut off.
    case lagged(queueLimit: Int)
    /// The caller may not do this.
    case permissionDenied
    /// The caller's uid holds as many of these (connections, subscriptions, logins) as one user
    /// may; it must let go of some first.
    case limitReached(resource: String, limit: Int)
    /// Any other of sesamed's named errors (a login's, a provider's, the protocol's).
    case refused(ContractError)
    /// Nothing answers at the socket path, or it refuses this user; `reason` says which.
    case cannotConnect(path: String, reason: String)
    /// The socket exists but refuses this user (its permissions, or a directory's).
    case accessDenied(path: String)
    /// sesamed runs but did not take the connection while the client kept trying: its queue of
    /// new connections stayed full (someone is connecting very often). Try again.
    case busy(path: String)
    /// The connection closed (the daemon stopped or restarted) before the answer came.
    case disconnected
    /// The daemon sent something that is not a Varlink reply.
    case invalidReply(String)
    /// An error this version does not know (a newer daemon's, or Varlink's own).
    case other(VarlinkError)

    /// Reads a Varlink error reply through the contract's one mapping (`ContractError`).
    public init(_ error: VarlinkError) {
        if error.name == VarlinkError.permissionDenied.name {
            self = .permissionDenied
            return
        }
        let parameters = error.parameters.compactMapValues { value -> ContractError.Value? in
            switch value {
            case .string(let text): .string(text)
            case .int(let number): .int(number)
            default: nil
            }
        }
        guard let contract = ContractError(name: error.name, parameters: parameters) else {
            self = .other(error)
            return
        }
        self = Self(contract)
    }

    private init(_ contract: ContractError) {
        switch contract {
        case .noSuchAccount(let account): self = .session(.noSuchAccount(account))
        case .needsLogin(let account): self = .session(.needsLogin(account))
        case .tokenExpired(let account): self = .session(.tokenExpired(account))
        case .refreshFailed(let account, let reason): self = .session(.refreshFailed(account: account, reason: reason))
        case .invalidTokens(let reason): self = .session(.invalidTokens(reason))
        case .invalidName(let name, let reason): self = .session(.invalidName(name: name, reason: reason))
        case .narrowingUnsupported(let account, let reason):
            self = .session(.narrowingUnsupported(account: account, reason: reason))
        case .narrowingRefused(let account, let reason):
            self = .session(.narrowingRefused(account: account, reason: reason))
        case .storeFailed: self = .session(.storeFailed("see the daemon's log"))
        case .lagged(let limit): self = .lagged(queueLimit: limit)
        case .tooManyConnections(let limit): self = .limitReached(resource: "connections", limit: limit)
        case .tooManySubscriptions(let limit): self = .limitReached(resource: "subscriptions", limit: limit)
        case .tooManyLogins(let limit): self = .limitReached(resource: "logins under way", limit: limit)
        case .tooManyAccounts(let limit): self = .limitReached(resource: "accounts", limit: limit)
        case .tooManyProviderCalls(let limit, _):
            self = .limitReached(resource: "calls that reach a provider in a minute", limit: limit)
        case .tooManyChanges(let limit, _):
            self = .limitReached(resource: "renames in a minute", limit: limit)
        default: self = .refused(contract)
        }
    }

    public var description: String {
        switch self {
        case .session(let error): "\(error)"
        case .lagged(let limit): "fell more than \(limit) events behind and was cut off"
        case .permissionDenied: "permission denied"
        case .limitReached(let resource, let limit): "too many \(resource) for this user (the limit is \(limit))"
        case .cannotConnect(let path, let reason): "cannot connect to \(path): \(reason)"
        case .accessDenied(let path): "permission denied on \(path)"
        case .busy(let path): "sesamed at \(path) is too busy to take a connection; try again"
        case .disconnected: "the connection to sesamed closed before it answered"
        case .invalidReply(let reason): "sesamed sent an invalid reply: \(reason)"
        case .refused(let error): Self.text(of: error)
        case .other(let error): "\(error)"
        }
    }

    /// A failure of the connection itself, in the client's terms.
    init(_ error: VarlinkClientError) {
        switch error {
        case .cannotConnect(let path, let reason): self = .cannotConnect(path: path, reason: reason)
        case .accessDenied(let path): self = .accessDenied(path: path)
        case .busy(let path): self = .busy(path: path)
        case .connectionClosed: self = .disconnected
        case .invalidReply(let reason): self = .invalidReply(reason)
        }
    }
}
