import FoundationEssentials
import SesameCore
import SesameProtocol

/// The one protocol every provider implements. Its job ends at tokens: it obtains, refreshes and
/// revokes them and calls nothing else (no business APIs). Every call is async; no callback
/// crosses a module boundary.
public protocol ProviderAdapter: TokenRefresher {
    /// Starts a device authorization (RFC 8628): the code and where the person enters it.
    func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization
    /// Polls until the person approved or denied the device login, or it expired, paying for
    /// each poll and telling of trouble at the provider as `polling` says.
    func finishDeviceLogin(_ authorization: DeviceAuthorization, polling: DevicePolling)
        async throws(ProviderError) -> ProviderLogin
    /// Builds the URL a browser opens for an authorization-code login with PKCE (RFC 7636).
    func startAuthorizationCodeLogin(redirectURI: String, scopes: [String]?) async throws(ProviderError)
        -> AuthorizationRequest
    /// Exchanges the code the redirect carried for tokens.
    func finishAuthorizationCodeLogin(_ request: AuthorizationRequest, code: String) async throws(ProviderError)
        -> ProviderLogin
    /// Revokes the grant (RFC 7009): the refresh token, and the access token.
    func revoke(_ tokens: TokenSet) async throws(ProviderError)
    /// Checks tokens an app handed over: an ID token must be signed by the provider, issued by
    /// it for this client, and about `subject` (expiry is not checked: the app may have logged
    /// in a while ago, and the ID token only says who logged in). Without one, an adapter whose
    /// provider can say whose an access token is asks it.
    func verifyHandedOver(_ tokens: TokenSet, subject: String) async throws(ProviderError)
    /// Asks the provider whether it still accepts the access token, as `subject`'s.
    func checkAccessToken(_ tokens: TokenSet, subject: String) async throws(ProviderError) -> AccessTokenCheck
    /// Checks the provider's configuration against the provider itself, before anyone logs in,
    /// paying for each request with `pay` and ending where it refuses.
    func checkConfiguration(pay: @escaping DevicePolling.Payment) async -> [ProviderCheck]
    /// Redeems an authorization code an app or web page obtained and handed over (the code
    /// handover of providers whose redirects cannot reach this machine, such as Apple's).
    func redeemCode(_ handover: HandedOverCode) async throws(ProviderError) -> ProviderLogin
    /// The flows `Login` offers; empty when accounts arrive only by handover.
    var loginFlows: [ProviderConfiguration.Flow] { get }
    /// Why `Login` is not offered, in one sentence, when `loginFlows` is empty.
    var loginUnavailable: String? { get }
    /// The provider's own settings, as its file gave them.
    var configuration: ProviderConfiguration { get }
    /// Whether revoking one grant ends every grant of the person with this client, so that a
    /// grant a new login replaced cannot be revoked without ending the new one.
    var revocationEndsEveryGrant: Bool { get }
}

extension ProviderAdapter {
    /// Revoking a grant ends that grant alone (RFC 7009 §2.1: the token and, for a refresh
    /// token, the access tokens of the same grant).
    public var revocationEndsEveryGrant: Bool { false }
}

extension ProviderAdapter {
    /// The configured name, e.g. `google`.
    public var name: String { configuration.name }
    /// The flow a login uses when the caller does not choose.
    public var defaultFlow: ProviderConfiguration.Flow { configuration.flow }
    /// Both flows, unless the adapter says otherwise.
    public var loginFlows: [ProviderConfiguration.Flow] { ProviderConfiguration.Flow.allCases }
    /// Login is offered, unless the adapter says otherwise.
    public var loginUnavailable: String? { nil }
}

/// A device login in progress: what to show the person, and what to poll with.
public struct DeviceAuthorization: Sendable {
    /// Where the person goes.
    public var verificationURI: String
    /// The same with the code filled in, when the provider gives one.
    public var verificationURIComplete: String?
    /// The code the person enters.
    public var userCode: String
    /// When the code stops working.
    public var expiresAt: Date
    /// How long to wait between polls; grows with `slow_down`.
    public var interval: Duration
    /// The secret the client polls with; never shown to anyone.
    let deviceCode: String
    /// The scopes asked for, kept for the token exchange.
    let scopes: [String]
}

/// An authorization-code login in progress. The PKCE verifier and the nonce stay in the
/// daemon; only `url` and `state` leave it.
public struct AuthorizationRequest: Sendable {
    /// Where the browser goes.
    public var url: String
    /// The single-use value the redirect must carry back.
    public var state: String
    /// The redirect URI the code is bound to.
    public var redirectURI: String
    let codeVerifier: String
    let nonce: String
    let scopes: [String]
}

/// The result of a login: tokens, and who logged in according to the validated ID token or,
/// without one, the userinfo endpoint.
public struct ProviderLogin: Sendable {
    /// The tokens.
    public var tokens: TokenSet
    /// The stable subject identifier.
    public var subject: String
    /// A name to show, when the ID token carried one.
    public var displayName: String?
}

/// Why a provider call failed, classified by what the daemon should do next.
public enum ProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The person refused (`access_denied`).
    case accessDenied
    /// The device code or authorization request expired.
    case expired
    /// This kind of provider cannot do that at all.
    case unsupported(String)
    /// The provider file (or the discovery document) lacks what this needs; the text names the
    /// provider-file key that supplies it.
    case misconfigured(String)
    /// The provider's TLS certificate does not verify (untrusted issuer, another name, expired):
    /// a configuration error that retrying will not fix. The text names `ca_file`.
    case untrustedCertificate(String)
    /// A failure that may pass: timeout, 5xx, 429, `temporarily_unavailable`.
    case transient(reason: String, retryAfter: Duration)
    /// The provider answered something that is not a valid response: malformed JSON, a bad
    /// signature, a token for another client. Nothing is changed because of it.
    case invalidResponse(String)
    /// The provider refused the request itself (`invalid_grant`, `invalid_client`, …), with
    /// the provider's own error code when it adds one (Kakao's `error_code`, e.g. KOE322). All
    /// are already sanitized (`ProviderText`): no secret the request carried is in them. The
    /// code, unlike the description, is a short token fit for events.
    case rejected(error: String, description: String?, code: String? = nil)

    public var description: String {
        switch self {
        case .accessDenied: "the login was denied"
        case .expired: "the login expired before it was completed"
        case .unsupported(let what): "the provider does not support \(what)"
        case .misconfigured(let what): what
        case .untrustedCertificate(let what): what
        case .transient(let reason, _): "the provider is unavailable for now (\(reason))"
        case .invalidResponse(let reason): "the provider's answer is not acceptable: \(reason)"
        case .rejected(let error, let description, let code):
            "the provider refused: \(error)\(code.map { " [\($0)]" } ?? "")\(description.map { " (\($0))" } ?? "")"
        }
    }
}
