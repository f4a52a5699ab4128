import FoundationEssentials
import SesameCore
import SesameWire

/// `io.sesame.Accounts`: its methods, and the parameters and reply of each.
public enum AccountsContract {
    /// The interface's name.
    public static let interface = "io.sesame.Accounts"
    /// How long an authorization-code login waits for its CompleteLogin, unless the connection
    /// that started it closes first; sesamectl waits as long for the browser.
    public static let authorizationCodeLoginLifetime: Duration = .seconds(300)

    /// `List`: the accounts the caller may see.
    public static let list = VarlinkMethod<NoParameters, ListReply>("List", of: interface)
    /// `Get`: one account.
    public static let get = VarlinkMethod<AccountParameters, AccountReply>("Get", of: interface)
    /// `ImportTokens`: tokens of a login done elsewhere.
    public static let importTokens = VarlinkMethod<ImportTokensParameters, LoggedInReply>("ImportTokens", of: interface)
    /// `Login`: a login, streamed (device code) or answered with its authorization (code flow).
    public static let login = VarlinkMethod<LoginParameters, LoginReply>("Login", of: interface)
    /// `CompleteLogin`: an authorization-code login's redirect.
    public static let completeLogin = VarlinkMethod<CompleteLoginParameters, LoggedInReply>(
        "CompleteLogin",
        of: interface
    )
    /// `ListProviders`: the configured providers.
    public static let listProviders = VarlinkMethod<NoParameters, ListProvidersReply>("ListProviders", of: interface)
    /// `CheckProvider`: a provider's file checked against the provider.
    public static let checkProvider = VarlinkMethod<ProviderParameters, CheckProviderReply>(
        "CheckProvider",
        of: interface
    )
    /// `RedeemCode`: a code an app handed over.
    public static let redeemCode = VarlinkMethod<RedeemCodeParameters, LoggedInReply>("RedeemCode", of: interface)
    /// `Refresh`: a refresh now.
    public static let refresh = VarlinkMethod<AccountParameters, AccountReply>("Refresh", of: interface)
    /// `ReportRejected`: an API refused the access token.
    public static let reportRejected = VarlinkMethod<ReportRejectedParameters, ReportRejectedReply>(
        "ReportRejected",
        of: interface
    )
    /// `Check`: whether the provider still accepts the access token.
    public static let check = VarlinkMethod<AccountParameters, CheckReply>("Check", of: interface)
    /// `GetToken`: a current access token.
    public static let getToken = VarlinkMethod<GetTokenParameters, GetTokenReply>("GetToken", of: interface)
    /// `Logout`: the session ended and its grant revoked.
    public static let logout = VarlinkMethod<AccountParameters, LogoutReply>("Logout", of: interface)
    /// `Remove`: the account's record deleted.
    public static let remove = VarlinkMethod<AccountParameters, NoParameters>("Remove", of: interface)
    /// `Rename`: a name for the account.
    public static let rename = VarlinkMethod<RenameParameters, AccountReply>("Rename", of: interface)
    /// `GetIDToken`: the account's current ID token.
    public static let getIDToken = VarlinkMethod<AccountParameters, GetIDTokenReply>("GetIDToken", of: interface)

    /// Every method, in the interface file's order.
    public static let methods: [any VarlinkMethodDescription] = [
        list, get, importTokens, login, completeLogin, listProviders, checkProvider, redeemCode, refresh,
        reportRejected, check, getToken, logout, remove, rename, getIDToken,
    ]
}

/// A method without parameters, or a reply without fields.
public struct NoParameters: VarlinkNoParameters, Hashable {
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
    /// With `account`: what became of the grant the login replaced, if it replaced one.
    public var replacedGrant: ReplacedGrant?

    /// Creates a reply.
    public init(
        verification: Verification? = nil,
        authorization: Authorization? = nil,
        account: Account? = nil,
        trouble: String? = nil,
        replacedGrant: ReplacedGrant? = nil
    ) {
        self.verification = verification
        self.authorization = authorization
        self.account = account
        self.trouble = trouble
        self.replacedGrant = replacedGrant
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
