import FoundationEssentials
import SesameCore

// The types of `io.sesame.Accounts` (interfaces/io.sesame.Accounts.varlink), written once for
// the daemon and SesameClient. ContractTests holds them to the interface file: a field, type or
// method that differs fails the test.

/// Tokens a program obtained itself, as it hands them to `importTokens`. Its descriptions never
/// show token text, so printing or logging one leaks nothing.
public struct Tokens: Sendable, Codable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
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
    public var expiresIn: Int64?
    /// Seconds until the refresh token expires.
    public var refreshExpiresIn: Int64?
    /// The granted scopes.
    public var scopes: [String]?

    /// Creates the tokens to import.
    public init(
        accessToken: String,
        refreshToken: String? = nil,
        idToken: String? = nil,
        tokenType: String? = nil,
        expiresIn: Int64? = nil,
        refreshExpiresIn: Int64? = nil,
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
        return "Tokens(redacted; \(refresh), \(expiry), scopes: \((scopes ?? []).joined(separator: " ")))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description])
    }
}

/// `GetToken`'s parameters: the account, and what its token is for when that is less than the
/// whole grant (another audience, resource or fewer scopes, obtained by token exchange).
public struct GetTokenParameters: Sendable, Codable, Hashable {
    /// The account id or name.
    public var account: String
    /// Scopes the token is to carry, a subset of those granted; nil for the grant's own.
    public var scopes: [String]?
    /// The service the token is for (RFC 8693 `audience`).
    public var audience: String?
    /// The absolute URI of the resource the token is for (RFC 8707 `resource`).
    public var resource: String?

    /// Creates the parameters.
    public init(account: String, scopes: [String]? = nil, audience: String? = nil, resource: String? = nil) {
        self.account = account
        self.scopes = scopes
        self.audience = audience
        self.resource = resource
    }

    /// What is asked beyond the account's own token.
    public var narrowing: TokenNarrowing {
        TokenNarrowing(scopes: scopes ?? [], audience: audience, resource: resource)
    }
}

/// An access token as `GetToken` hands it out.
public struct GetTokenReply: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The token to send to the API.
    public var accessToken: String
    /// How to present it, usually `Bearer`.
    public var tokenType: String
    /// When it expires, if known.
    public var expiresAt: Date?

    /// Creates the reply.
    public init(accessToken: String, tokenType: String, expiresAt: Date?) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresAt = expiresAt
    }

    /// Describes the token without showing it.
    public var description: String { "GetTokenReply(\(tokenType), expires \(expiresAt.map { "\($0)" } ?? "unknown"))" }
}

/// What a device login asks the person to do.
public struct Verification: Sendable, Codable, Hashable {
    /// Where to go.
    public var uri: String
    /// The same with the code filled in, when the provider gives one.
    public var uriComplete: String?
    /// The code to enter.
    public var userCode: String
    /// When the code stops working.
    public var expiresAt: Date

    /// Creates the verification.
    public init(uri: String, uriComplete: String?, userCode: String, expiresAt: Date) {
        self.uri = uri
        self.uriComplete = uriComplete
        self.userCode = userCode
        self.expiresAt = expiresAt
    }
}

/// The ways sesamed can log an account in.
public enum LoginFlow: String, Sendable, Hashable, CaseIterable, Codable {
    /// The device flow (RFC 8628): the person enters a code on any device.
    case device
    /// Authorization code with PKCE, redirected to a loopback address the caller listens on.
    case authorizationCode
}

/// What `logout` did.
public struct LogoutReply: Sendable, Codable, Hashable {
    /// The account, now logged out; its tokens are wiped either way.
    public var account: Account
    /// True when the provider confirmed it revoked the grant, false when it was not revoked
    /// there (see `notRevokedReason`).
    public var revokedRemotely: Bool
    /// Why the grant was not revoked at the provider, when the daemon says.
    public var notRevokedReason: String?

    /// Creates the reply.
    public init(account: Account, revokedRemotely: Bool, notRevokedReason: String?) {
        self.account = account
        self.revokedRemotely = revokedRemotely
        self.notRevokedReason = notRevokedReason
    }
}

/// A configured provider, and how its accounts log in.
public struct Provider: Sendable, Codable, Hashable {
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
    /// What in the provider's file still works but is to be mended (an old spelling), each
    /// sentence naming the file; nil when nothing is.
    public var notices: [String]?

    enum CodingKeys: String, CodingKey {
        case name, type, flows, defaultFlow, loginUnavailable, notices
        case redirectURI = "redirectUri"
    }

    /// Creates a provider entry.
    public init(
        name: String,
        type: String,
        flows: [LoginFlow],
        defaultFlow: LoginFlow?,
        redirectURI: String?,
        loginUnavailable: String?,
        notices: [String]? = nil
    ) {
        self.name = name
        self.type = type
        self.flows = flows
        self.defaultFlow = defaultFlow
        self.redirectURI = redirectURI
        self.loginUnavailable = loginUnavailable
        self.notices = notices
    }
}

/// Where to send the browser for an authorization-code login.
public struct Authorization: Sendable, Codable, Hashable {
    /// The URL to open.
    public var url: String
    /// The value the redirect must carry back.
    public var state: String

    /// Creates the authorization.
    public init(url: String, state: String) {
        self.url = url
        self.state = state
    }
}
