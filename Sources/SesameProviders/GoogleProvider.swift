import FoundationEssentials
import SesameCore

/// Google: OpenID Connect with discovery, where Google's device flow and revocation differ from
/// the RFCs. Desktop clients log in with a loopback redirect and PKCE ("OAuth 2.0 for iOS &
/// Desktop Apps"); "TVs and Limited Input devices" clients use the device flow ("OAuth 2.0 for
/// TV and Limited-Input Device Applications"). Both client types carry a client secret.
public final class GoogleProvider: OIDCBasedAdapter {
    /// Google's issuer; endpoints come from its discovery document.
    public static let issuer = "https://accounts.google.com"
    /// Without `access_type=offline` Google issues no refresh token ("Refreshing an access
    /// token (offline access)"), and the session would end with its first access token.
    public static let defaultAuthorizationParameters = ["access_type": "offline"]

    let base: GenericOIDCProvider

    /// Creates the adapter, sending over `transport` (which must outlive it) and reading time from `clock`.
    public init(
        configuration: ProviderConfiguration,
        transport: any HTTPTransport,
        clock: any SessionClock = SystemSessionClock()
    ) {
        // Google's token requests carry client_id and client_secret in the body.
        base = GenericOIDCProvider(
            configuration: configuration,
            http: OAuthHTTP(transport: transport, configuration: configuration, clock: clock),
            credentials: .configured(configuration, placement: .body)
        )
    }

    // MARK: Device flow, Google's way

    /// The scopes Google's device flow grants ("OAuth 2.0 for TV and Limited-Input Device
    /// Applications", "Allowed scopes"): OpenID Connect's, and a few of Drive's and YouTube's.
    /// Google refuses the whole request for any other (`invalid_scope`).
    static let deviceFlowScopes: Set<String> = [
        "openid", "email", "profile",
        "https://www.googleapis.com/auth/userinfo.email", "https://www.googleapis.com/auth/userinfo.profile",
        "https://www.googleapis.com/auth/drive.appdata", "https://www.googleapis.com/auth/drive.file",
        "https://www.googleapis.com/auth/youtube", "https://www.googleapis.com/auth/youtube.readonly",
    ]

    /// "Step 1: Request device and user codes", read with Google's names. Scopes the device
    /// flow does not allow are refused here, before Google is asked, with the way that works.
    public func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization {
        let scopes = scopes ?? configuration.scopes
        let refused = scopes.filter { !Self.deviceFlowScopes.contains($0) }
        guard refused.isEmpty else {
            throw .unsupported(
                "the scope \(refused.joined(separator: ", ")) in its device flow, which grants only "
                    + "openid, email, profile and a few Drive and YouTube scopes; log in with --browser instead"
            )
        }
        let endpoint = try await base.endpoint(.deviceAuthorizationEndpoint, for: "the device flow")
        // "Step 1: Request device and user codes": client_id and scope only.
        let response = try await base.http.postForm(
            endpoint,
            [("client_id", configuration.clientID), ("scope", scopes.joined(separator: " "))]
        )
        let body = try OAuthHTTP.classify(response, as: GoogleDeviceResponse.self)
        guard let verification = body.verificationURL ?? body.verificationURI else {
            throw .invalidResponse("the device authorization names no verification_url")
        }
        return DeviceAuthorization(
            received: verification,
            complete: nil,
            userCode: body.userCode,
            expiresIn: body.expiresIn,
            interval: body.interval,
            deviceCode: body.deviceCode,
            scopes: scopes,
            now: base.http.clock.now
        )
    }

    /// Polls like any device flow, reading Google's answers its own way.
    public func finishDeviceLogin(_ authorization: DeviceAuthorization, polling: DevicePolling)
        async throws(ProviderError) -> ProviderLogin
    {
        try await base.pollDeviceToken(authorization, polling: polling) { response throws(ProviderError) in
            // "Step 6: Handle responses to polling requests": Google answers 428 for
            // authorization_pending and 403 for slow_down and access_denied, so the `error`
            // field decides, not the status (a 5xx or 429 still passes as transient).
            let status = response.status.code
            if status != 429, !(500..<600).contains(status),
                let error = try? JSONDecoder().decode(OAuthErrorBody.self, from: response.body)
            {
                throw OAuthHTTP.error(error, of: response)
            }
            return try OAuthHTTP.classify(response, as: TokenResponse.self)
        }
    }

    // MARK: Refresh

    /// A refresh as any, with Google's one answer for a refresh token that no longer works
    /// explained: "Token has been expired or revoked." stands for each cause Google documents
    /// ("Using OAuth 2.0 to Access Google APIs", "Refresh token expiration"), which the answer
    /// does not tell apart, so the person is told them all.
    public func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        guard let refreshToken = tokens.refreshToken else { throw .unavailable }
        let body: TokenResponse
        do throws(ProviderError) {
            body = try await GenericOIDCProvider.refreshGrant(refreshToken, of: tokens, through: base.tokenRequest)
        } catch .rejected(error: "invalid_grant", description: "Token has been expired or revoked.", _) {
            throw .needsLogin(reason: Self.expiredOrRevoked)
        } catch {
            throw error.refreshFailure
        }
        return try await base.refreshed(body, account: account, tokens: tokens)
    }

    /// Why a refresh Google refused as expired or revoked needs a login, in every cause Google names.
    static let expiredOrRevoked =
        "Google says the refresh token expired or was revoked: access removed in the Google Account, "
        + "a password change (with Gmail scopes), six months unused, a Testing app's seven-day limit, "
        + "or more than 100 refresh tokens of this account for this client"

    // MARK: Revocation

    /// Google ties every token to one authorization per person, app and scopes: revoking any
    /// of its tokens removes the app's access, and with it every other token of that person.
    public var revocationEndsEveryGrant: Bool { true }

    /// "Revoking a token": one `token` field; revoking the refresh token ends the whole grant,
    /// access tokens included. Google answers 400 `invalid_token` for a token that is already
    /// dead, which for logging out means the same as success.
    public func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        let endpoint = try await base.endpoint(.revocationEndpoint, for: "revoking at the provider")
        let response = try await base.http.postForm(endpoint, [("token", tokens.refreshToken ?? tokens.accessToken)])
        switch response.status.code {
        case 200..<300: return
        case 400 where (try? JSONDecoder().decode(OAuthErrorBody.self, from: response.body))?.error == "invalid_token":
            return
        case 429, 500..<600: throw .transient(reason: "HTTP \(response.status.code)", retryAfter: .seconds(5))
        default: throw .invalidResponse("revocation answered HTTP \(response.status.code)")
        }
    }
}

/// Google's device authorization answer: `verification_url`, where RFC 8628 §3.2 says
/// `verification_uri` (accepted too, should Google adopt the RFC's name).
private struct GoogleDeviceResponse: Decodable {
    var deviceCode: String
    var userCode: String
    var verificationURL: String?
    var verificationURI: String?
    var expiresIn: Int
    var interval: Int?

    enum CodingKeys: String, CodingKey {
        case deviceCode = "device_code"
        case userCode = "user_code"
        case verificationURL = "verification_url"
        case verificationURI = "verification_uri"
        case expiresIn = "expires_in"
        case interval
    }
}
