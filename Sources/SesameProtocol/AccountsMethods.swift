import FoundationEssentials
import SesameCore

/// `io.sesame.Accounts`: its methods, and the parameters and reply of each.
public enum AccountsContract {
    /// The interface's name.
    public static let interface = "io.sesame.Accounts"

    /// The methods, by their wire names.
    public enum Method: String, Sendable, CaseIterable {
        case list = "List"
        case get = "Get"
        case importTokens = "ImportTokens"
        case login = "Login"
        case completeLogin = "CompleteLogin"
        case listProviders = "ListProviders"
        case redeemCode = "RedeemCode"
        case refresh = "Refresh"
        case reportRejected = "ReportRejected"
        case check = "Check"
        case getToken = "GetToken"
        case logout = "Logout"
        case remove = "Remove"
        case rename = "Rename"
        case getIDToken = "GetIDToken"

        /// The fully qualified name, e.g. `io.sesame.Accounts.List`.
        public var qualifiedName: String { "\(AccountsContract.interface).\(rawValue)" }

        /// The parameter and reply types of this method.
        public var signature: (parameters: any Codable.Type, reply: any Codable.Type) {
            switch self {
            case .list: (NoParameters.self, ListReply.self)
            case .get, .refresh: (AccountParameters.self, AccountReply.self)
            case .importTokens: (ImportTokensParameters.self, AccountReply.self)
            case .login: (LoginParameters.self, LoginReply.self)
            case .completeLogin: (CompleteLoginParameters.self, AccountReply.self)
            case .listProviders: (NoParameters.self, ListProvidersReply.self)
            case .redeemCode: (RedeemCodeParameters.self, AccountReply.self)
            case .reportRejected: (ReportRejectedParameters.self, ReportRejectedReply.self)
            case .check: (AccountParameters.self, CheckReply.self)
            case .getToken: (GetTokenParameters.self, GetTokenReply.self)
            case .logout: (AccountParameters.self, LogoutReply.self)
            case .remove: (AccountParameters.self, NoParameters.self)
            case .rename: (RenameParameters.self, AccountReply.self)
            case .getIDToken: (AccountParameters.self, GetIDTokenReply.self)
            }
        }
    }
}

/// A method without parameters, or a reply without fields.
public struct NoParameters: Sendable, Codable, Hashable {
    /// Nothing to give.
    public init() {}
}

/// The one account a method is about.
public struct AccountParameters: Sendable, Codable, Hashable {
    /// The account id.
    public var account: String
    /// Names the account.
    public init(account: String) { self.account = account }
}

/// `List`'s reply.
public struct ListReply: Sendable, Codable, Hashable {
    /// The accounts the caller may see.
    public var accounts: [Account]
    /// Creates the reply.
    public init(accounts: [Account]) { self.accounts = accounts }
}

/// The reply of the methods that answer with one account.
public struct AccountReply: Sendable, Codable, Hashable {
    /// The account.
    public var account: Account
    /// Creates the reply.
    public init(account: Account) { self.account = account }
}

/// `ImportTokens`' parameters.
public struct ImportTokensParameters: Sendable, Codable, Hashable {
    /// The configured provider.
    public var provider: String
    /// The provider's subject identifier for the person.
    public var subject: String
    /// A name to show people.
    public var displayName: String?
    /// The owner, when root imports for another uid.
    public var owner: UInt32?
    /// The tokens.
    public var tokens: Tokens

    /// Creates the parameters.
    public init(provider: String, subject: String, displayName: String?, owner: UInt32?, tokens: Tokens) {
        self.provider = provider
        self.subject = subject
        self.displayName = displayName
        self.owner = owner
        self.tokens = tokens
    }
}

/// `Login`'s parameters.
public struct LoginParameters: Sendable, Codable, Hashable {
    /// The configured provider.
    public var provider: String
    /// The flow; the provider's own when nil.
    public var flow: LoginFlow?
    /// The loopback redirect the caller listens on (authorization-code flow).
    public var redirectUri: String?
    /// Scopes instead of the provider's configured ones.
    public var scopes: [String]?

    /// Creates the parameters.
    public init(provider: String, flow: LoginFlow?, redirectUri: String?, scopes: [String]?) {
        self.provider = provider
        self.flow = flow
        self.redirectUri = redirectUri
        self.scopes = scopes
    }
}

/// One reply of `Login`: what to show, where to send the browser, or the account.
public struct LoginReply: Sendable, Codable, Hashable {
    /// A device login's code and where to enter it.
    public var verification: Verification?
    /// An authorization-code login's URL and state.
    public var authorization: Authorization?
    /// The logged-in account, in the last reply.
    public var account: Account?
    /// While a device login polls: what troubles the provider, a short fixed sentence (never
    /// the provider's words), alone in a reply; the empty string once it has passed.
    public var trouble: String?

    /// Creates a reply.
    public init(
        verification: Verification? = nil,
        authorization: Authorization? = nil,
        account: Account? = nil,
        trouble: String? = nil
    ) {
        self.verification = verification
        self.authorization = authorization
        self.account = account
        self.trouble = trouble
    }
}

/// `CompleteLogin`'s parameters.
public struct CompleteLoginParameters: Sendable, Codable, Hashable {
    /// The state of the login, single-use.
    public var state: String
    /// The code the redirect carried.
    public var code: String
    /// Creates the parameters.
    public init(state: String, code: String) {
        self.state = state
        self.code = code
    }
}

/// `ListProviders`' reply.
public struct ListProvidersReply: Sendable, Codable, Hashable {
    /// The configured providers.
    public var providers: [Provider]
    /// Creates the reply.
    public init(providers: [Provider]) { self.providers = providers }
}

/// `RedeemCode`'s parameters: a handed-over code and what its request was bound to.
public struct RedeemCodeParameters: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The configured provider.
    public var provider: String
    /// The single-use code.
    public var code: String
    /// The authorization request's redirect URI, when it named one.
    public var redirectUri: String?
    /// The PKCE verifier, when the app used PKCE.
    public var codeVerifier: String?
    /// The authorization request's state (Naver wants it again).
    public var state: String?
    /// Apple's `user` form field as posted with the code.
    public var user: String?
    /// A name to show people, over any the provider gives.
    public var displayName: String?

    /// Creates the parameters.
    public init(
        provider: String,
        code: String,
        redirectUri: String? = nil,
        codeVerifier: String? = nil,
        state: String? = nil,
        user: String? = nil,
        displayName: String? = nil
    ) {
        self.provider = provider
        self.code = code
        self.redirectUri = redirectUri
        self.codeVerifier = codeVerifier
        self.state = state
        self.user = user
        self.displayName = displayName
    }

    /// Never the code or the verifier.
    public var description: String { "RedeemCodeParameters(provider: \(provider))" }
}

/// `ReportRejected`'s parameters.
public struct ReportRejectedParameters: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The account.
    public var account: String
    /// The access token the API rejected.
    public var accessToken: String
    /// Creates the parameters.
    public init(account: String, accessToken: String) {
        self.account = account
        self.accessToken = accessToken
    }

    /// Never the token.
    public var description: String { "ReportRejectedParameters(account: \(account))" }
}

/// `ReportRejected`'s reply.
public struct ReportRejectedReply: Sendable, Codable, Hashable {
    /// Whether the account now holds another access token.
    public var refreshed: Bool
    /// Creates the reply.
    public init(refreshed: Bool) { self.refreshed = refreshed }
}

/// What the provider said of the access token, asked by `Check`.
public enum TokenVerdict: String, Sendable, Codable, Hashable, CaseIterable {
    /// The provider accepts it.
    case accepted
    /// The provider no longer accepts it; sesamed has tried a refresh.
    case rejected
    /// The provider offers no way to ask, or could not be asked now.
    case unknown
}

/// `Check`'s reply.
public struct CheckReply: Sendable, Codable, Hashable {
    /// The account as it stands after the check (and the refresh a rejection leads to).
    public var account: Account
    /// What the provider said.
    public var verdict: TokenVerdict
    /// Why the token was rejected, or why it could not be checked; Sesame's words.
    public var detail: String?
    /// Whether the account now holds another access token.
    public var refreshed: Bool

    /// Creates the reply.
    public init(account: Account, verdict: TokenVerdict, detail: String?, refreshed: Bool) {
        self.account = account
        self.verdict = verdict
        self.detail = detail
        self.refreshed = refreshed
    }
}

/// `Rename`'s parameters.
public struct RenameParameters: Sendable, Codable, Hashable {
    /// The account.
    public var account: String
    /// Its new name; nil takes its name away.
    public var name: String?
    /// Creates the parameters.
    public init(account: String, name: String?) {
        self.account = account
        self.name = name
    }
}

/// `GetIDToken`'s reply: the account's current ID token, for servers that take one (Kubernetes'
/// OpenID Connect authentication).
public struct GetIDTokenReply: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The ID token, a signed JWT.
    public var idToken: String
    /// When it expires (its `exp` claim), if it says.
    public var expiresAt: Date?

    /// Creates the reply.
    public init(idToken: String, expiresAt: Date?) {
        self.idToken = idToken
        self.expiresAt = expiresAt
    }

    /// Describes the token without showing it.
    public var description: String { "GetIDTokenReply(expires \(expiresAt.map { "\($0)" } ?? "unknown"))" }
}
