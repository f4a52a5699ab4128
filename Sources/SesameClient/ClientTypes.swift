import Foundation
import SesameCore
import SesameVarlink

/// What `org.varlink.service.GetInfo` reports about the daemon.
public struct ServiceInfo: Sendable, Decodable, Hashable {
    /// Who makes the service.
    public var vendor: String
    /// The service's name.
    public var product: String
    /// The daemon's version.
    public var version: String
    /// Where to learn more.
    public var url: String
    /// Every interface the daemon serves.
    public var interfaces: [String]
}

/// Tokens a program obtained itself, as it hands them to `importTokens`. Its descriptions never
/// show token text, so printing or logging one leaks nothing.
public struct ImportedTokens: Sendable, Codable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The access token.
    public var accessToken: String
    /// The refresh token, if the provider issued one.
    public var refreshToken: String?
    /// The OpenID Connect ID token, if any.
    public var idToken: String?
    /// Usually `Bearer`.
    public var tokenType: String?
    /// Seconds until the access token expires.
    public var expiresIn: Int?
    /// Seconds until the refresh token expires.
    public var refreshExpiresIn: Int?
    /// The granted scopes.
    public var scopes: [String]?

    /// Creates the tokens to import.
    public init(
        accessToken: String,
        refreshToken: String? = nil,
        idToken: String? = nil,
        tokenType: String? = nil,
        expiresIn: Int? = nil,
        refreshExpiresIn: Int? = nil,
        scopes: [String]? = nil
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshExpiresIn = refreshExpiresIn
        self.scopes = scopes
    }

    public var description: String {
        let refresh = refreshToken == nil ? "no refresh token" : "a refresh token"
        let expiry = expiresIn.map { "expires in \($0) s" } ?? "no stated expiry"
        return "ImportedTokens(redacted; \(refresh), \(expiry), scopes: \((scopes ?? []).joined(separator: " ")))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description])
    }
}

/// An access token as `GetToken` hands it out.
public struct AccessToken: Sendable, Decodable, Hashable, CustomStringConvertible {
    /// The token to send to the API.
    public var accessToken: String
    /// How to present it, usually `Bearer`.
    public var tokenType: String
    /// When it expires, if known.
    public var expiresAt: Date?

    /// Describes the token without showing it.
    public var description: String { "AccessToken(\(tokenType), expires \(expiresAt.map { "\($0)" } ?? "unknown"))" }
}

/// What a device login asks the person to do.
public struct DeviceVerification: Sendable, Decodable, Hashable {
    /// Where to go.
    public var uri: String
    /// The same with the code filled in, when the provider gives one.
    public var uriComplete: String?
    /// The code to enter.
    public var userCode: String
    /// When the code stops working.
    public var expiresAt: Date
}

/// The ways sesamed can log an account in.
public enum LoginFlow: String, Sendable, Hashable, CaseIterable, Decodable {
    /// The device flow (RFC 8628): the person enters a code on any device.
    case device
    /// Authorization code with PKCE, redirected to a loopback address the caller listens on.
    case authorizationCode
}

/// Progress of a login.
public enum LoginProgress: Sendable, Hashable {
    /// A device login: show this to the person; `.done` follows once they approved.
    case verification(DeviceVerification)
    /// An authorization-code login: send the browser here, then call `completeLogin` with the
    /// code the redirect carries. Nothing follows on this stream.
    case authorization(BrowserAuthorization)
    /// The account is logged in.
    case done(Account)

    /// Reads a reply of `Login`; nil for a kind of reply this version does not know.
    init?(_ reply: VarlinkReplyMessage) throws {
        func member(_ name: String) -> JSONValue? {
            guard let value = reply.parameters[name], value != .null else { return nil }
            return value
        }
        if let verification = member("verification") {
            self = .verification(try verification.decode(as: DeviceVerification.self))
        } else if let authorization = member("authorization") {
            self = .authorization(try authorization.decode(as: BrowserAuthorization.self))
        } else if let account = member("account") {
            self = .done(try account.decode(as: Account.self))
        } else {
            return nil
        }
    }
}

/// What `logout` did.
public struct LogoutResult: Sendable, Decodable, Hashable {
    /// The account, now logged out; its tokens are wiped either way.
    public var account: Account
    /// True when the provider confirmed it revoked the grant, false when it was not revoked
    /// there (see `notRevokedReason`); nil from a daemon too old to say.
    public var revokedRemotely: Bool?
    /// Why the grant was not revoked at the provider, when the daemon says.
    public var notRevokedReason: String?
}

/// A configured provider, and how its accounts log in.
public struct ProviderInfo: Sendable, Decodable, Hashable {
    /// The provider's name, e.g. `google`.
    public var name: String
    /// The adapter: oidc, kakao, naver, google or apple.
    public var type: String
    /// The flows `login` offers; empty when accounts arrive only by handover (Apple).
    public var flows: [LoginFlow]
    /// The flow `login` uses when none is named.
    public var defaultFlow: LoginFlow?
    /// The one loopback redirect registered at the provider, when it accepts no other.
    public var redirectURI: String?
    /// Why `login` is not offered, when `flows` is empty.
    public var loginUnavailable: String?

    enum CodingKeys: String, CodingKey {
        case name, type, flows, defaultFlow, loginUnavailable
        case redirectURI = "redirectUri"
    }
}

/// An authorization code an app or web page obtained, with what its request was bound to.
public struct HandedOverCode: Sendable, Hashable, CustomStringConvertible {
    /// The single-use code.
    public var code: String
    /// The authorization request's redirect URI, when it named one.
    public var redirectURI: String?
    /// The PKCE verifier, when the app used PKCE.
    public var codeVerifier: String?
    /// The authorization request's state (Naver wants it again).
    public var state: String?
    /// Apple's `user` form field as posted with the code.
    public var user: String?

    /// Creates a handover.
    public init(
        code: String,
        redirectURI: String? = nil,
        codeVerifier: String? = nil,
        state: String? = nil,
        user: String? = nil
    ) {
        self.code = code
        self.redirectURI = redirectURI
        self.codeVerifier = codeVerifier
        self.state = state
        self.user = user
    }

    /// Never the code or the verifier.
    public var description: String { "HandedOverCode(redirectURI: \(redirectURI ?? "-"))" }
}

/// Where to send the browser for an authorization-code login.
public struct BrowserAuthorization: Sendable, Decodable, Hashable {
    /// The URL to open.
    public var url: String
    /// The value the redirect must carry back.
    public var state: String
}

/// One reply of an event subscription.
public enum SubscriptionUpdate: Sendable, Hashable {
    /// The subscription is live: every event after `sequence` will arrive.
    case ready(sequence: UInt64)
    /// One change to a session.
    case event(AuthEvent)
    /// The full current state, sent when the missed events are no longer kept.
    case resync(sequence: UInt64, accounts: [Account])

    /// Reads a reply; nil for a kind of reply this version does not know, so older clients keep
    /// working against newer daemons.
    init?(_ reply: VarlinkReplyMessage) throws {
        struct Ready: Decodable { var sequence: UInt64 }
        struct Resync: Decodable {
            var sequence: UInt64
            var accounts: [Account]
        }
        if let ready = reply.parameters["ready"] {
            self = .ready(sequence: try ready.decode(as: Ready.self).sequence)
        } else if let event = reply.parameters["event"] {
            self = .event(try event.decode(as: AuthEvent.self))
        } else if let resync = reply.parameters["resync"] {
            let decoded = try resync.decode(as: Resync.self)
            self = .resync(sequence: decoded.sequence, accounts: decoded.accounts)
        } else {
            return nil
        }
    }
}

/// A named error sesamed answered with.
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
    /// Nothing answers at the socket path, or it refuses this user; `reason` says which.
    case cannotConnect(path: String, reason: String)
    /// The connection closed (the daemon stopped or restarted) before the answer came.
    case disconnected
    /// The daemon sent something that is not a Varlink reply.
    case invalidReply(String)
    /// Any other error reply.
    case other(VarlinkError)

    /// Reads a Varlink error reply.
    public init(_ error: VarlinkError) {
        let account = error.parameters["account"]?.stringValue ?? ""
        let reason = error.parameters["reason"]?.stringValue ?? ""
        switch error.name {
        case "io.sesame.Accounts.NoSuchAccount": self = .session(.noSuchAccount(account))
        case "io.sesame.Accounts.NeedsLogin": self = .session(.needsLogin(account))
        case "io.sesame.Accounts.TokenExpired": self = .session(.tokenExpired(account))
        case "io.sesame.Accounts.RefreshFailed": self = .session(.refreshFailed(account: account, reason: reason))
        case "io.sesame.Accounts.InvalidTokens": self = .session(.invalidTokens(reason))
        case "io.sesame.Accounts.StoreFailed": self = .session(.storeFailed("see the daemon's log"))
        case "io.sesame.Events.Lagged":
            guard case .int(let limit)? = error.parameters["queueLimit"] else {
                self = .other(error)
                return
            }
            self = .lagged(queueLimit: Int(limit))
        case "org.varlink.service.PermissionDenied": self = .permissionDenied
        default:
            if let resource = Self.limitedResources[error.name], case .int(let limit)? = error.parameters["limit"] {
                self = .limitReached(resource: resource, limit: Int(limit))
            } else {
                self = .other(error)
            }
        }
    }

    /// The per-user limit errors, and what each one limits.
    private static let limitedResources = [
        "io.sesame.Varlink.TooManyConnections": "connections",
        "io.sesame.Events.TooManySubscriptions": "subscriptions",
        "io.sesame.Accounts.TooManyLogins": "logins under way",
    ]

    public var description: String {
        switch self {
        case .session(let error): "\(error)"
        case .lagged(let limit): "fell more than \(limit) events behind and was cut off"
        case .permissionDenied: "permission denied"
        case .limitReached(let resource, let limit): "too many \(resource) for this user (the limit is \(limit))"
        case .cannotConnect(let path, let reason): "cannot connect to \(path): \(reason)"
        case .disconnected: "the connection to sesamed closed before it answered"
        case .invalidReply(let reason): "sesamed sent an invalid reply: \(reason)"
        case .other(let error): Self.loginErrorText(error) ?? "\(error)"
        }
    }

    /// A failure of the connection itself, in the client's terms.
    init(_ error: VarlinkClientError) {
        switch error {
        case .cannotConnect(let path, let reason): self = .cannotConnect(path: path, reason: reason)
        case .connectionClosed: self = .disconnected
        case .invalidReply(let reason): self = .invalidReply(reason)
        }
    }
}
