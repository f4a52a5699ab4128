import Crypto
import FoundationEssentials
import SesameCore
import SesameProtocol

/// Any OpenID Connect provider, or plain OAuth 2.0 server with a userinfo endpoint, configured
/// by issuer (discovery) or explicit endpoints. The provider-specific adapters build on it for
/// what their providers do by the standards.
public final class GenericOIDCProvider: ProviderAdapter {
    public let configuration: ProviderConfiguration
    let http: OAuthHTTP
    let discovery: Discovery
    let credentials: ClientCredentials
    /// Who an access token belongs to, for providers with their own profile API instead of
    /// OpenID Connect userinfo; nil means userinfo.
    let profile: ProfileLookup?
    /// How a grant this provider issued is ended, for providers without RFC 7009; nil means
    /// `revoke`.
    let revoker: Revoker?

    /// Creates the provider, sending over `transport` (which must outlive it) and reading time from `clock`.
    public convenience init(
        configuration: ProviderConfiguration,
        transport: any HTTPTransport,
        clock: any SessionClock = SystemSessionClock()
    ) {
        self.init(
            configuration: configuration,
            http: OAuthHTTP(transport: transport, configuration: configuration, clock: clock),
            credentials: .standard(configuration)
        )
    }

    init(
        configuration: ProviderConfiguration,
        http: OAuthHTTP,
        credentials: ClientCredentials,
        profile: ProfileLookup? = nil,
        revoker: Revoker? = nil
    ) {
        self.configuration = configuration
        self.http = http
        self.discovery = Discovery(configuration: configuration, http: http)
        self.credentials = credentials
        self.profile = profile
        self.revoker = revoker
    }

    /// Ends a grant the provider just issued that sesamed will not keep, by the provider's own means.
    func revokeIssued(_ tokens: TokenSet) async throws(ProviderError) {
        try await OAuthHTTP.redacting(tokens.secrets) { () async throws(ProviderError) in
            if let revoker { try await revoker(self, tokens) } else { try await revoke(tokens) }
        }
    }

    // MARK: Device flow (RFC 8628)

    public func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization {
        let endpoint = try await endpoint(.deviceAuthorizationEndpoint, for: "the device flow")
        let scopes = scopes ?? configuration.scopes
        // RFC 8628 §3.1: the client authenticates as at the token endpoint.
        let response = try await post(endpoint, [("scope", scopes.joined(separator: " "))])
        let body = try OAuthHTTP.classify(response, as: DeviceAuthorizationResponse.self)
        return DeviceAuthorization(
            received: body.verificationURI,
            complete: body.verificationURIComplete,
            userCode: body.userCode,
            expiresIn: body.expiresIn,
            interval: body.interval,
            deviceCode: body.deviceCode,
            scopes: scopes,
            now: http.clock.now
        )
    }

    public func finishDeviceLogin(_ authorization: DeviceAuthorization, polling: DevicePolling)
        async throws(ProviderError) -> ProviderLogin
    {
        try await pollDeviceToken(authorization, polling: polling) { response throws(ProviderError) in
            try OAuthHTTP.classify(response, as: TokenResponse.self)
        }
    }

    /// Polls the token endpoint (RFC 8628 §3.4) until the person approved or denied, or the code
    /// expired; `classify` reads each answer (Google reads its errors its own way). Each poll is
    /// paid for first (`polling.pay`), and waits while it cannot be; `polling.onTrouble` hears
    /// of transient failures, of a wait for payment, and of their passing.
    func pollDeviceToken(
        _ authorization: DeviceAuthorization,
        polling: DevicePolling,
        classify: (OAuthHTTP.Response) throws(ProviderError) -> TokenResponse
    ) async throws(ProviderError) -> ProviderLogin {
        let tokenEndpoint = try await tokenEndpoint()
        var interval = authorization.interval
        // Whether the last poll met trouble, so that its passing is said once; and whether the
        // person was told that polls wait for the allowance, which is said once per login.
        var troubled = false
        var slowed = false
        while true {
            try await sleep(for: interval, before: authorization.expiresAt)
            while let wait = polling.pay() {
                if !slowed { await polling.onTrouble(DeviceLoginTrouble.unpaid) }
                slowed = true
                try await sleep(for: wait, before: authorization.expiresAt)
            }
            let fields = [
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                ("device_code", authorization.deviceCode),
            ]
            do {
                let response = try await post(tokenEndpoint, fields, timeout: configuration.tokenRequestTimeout)
                let tokens = try classify(response)
                // RFC 8628 §3.5: a plain RFC 6749 §5.1 answer, usually without an ID token.
                return try await login(tokens, scopes: authorization.scopes, nonce: nil)
            } catch .rejected(error: "authorization_pending", _, _) {
                if troubled { await polling.onTrouble(nil) }
                troubled = false
            } catch .rejected(error: "slow_down", _, _) {
                interval += .seconds(5)
            } catch .transient(let reason, _) {
                // Keep polling at the same pace until the code expires; the provider may come back.
                if !Task.isCancelled { await polling.onTrouble(DeviceLoginTrouble.sentence(for: reason)) }
                troubled = true
            }
        }
    }

    /// Sleeps for `duration`; throws `expired` when cancelled or once the code has run out.
    private func sleep(for duration: Duration, before expiry: Date) async throws(ProviderError) {
        do {
            try await http.clock.sleep(for: duration)
        } catch {
            throw .expired
        }
        guard http.clock.now < expiry else { throw .expired }
    }

    // MARK: Revocation (RFC 7009)

    public func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        let endpoint: String
        do throws(ProviderError) {
            endpoint = try await self.endpoint(.revocationEndpoint, for: "revoking at the provider")
        } catch .misconfigured(let why) {
            // No revocation endpoint anywhere: trying again cannot help until the file changes.
            throw .unsupported("revocation (\(why))")
        }
        // The refresh token first: revoking it ends the grant; the access token then stops early.
        let targets = [(tokens.refreshToken, "refresh_token"), (Optional(tokens.accessToken), "access_token")]
        for case let (token?, hint) in targets {
            let response = try await post(endpoint, [("token", token), ("token_type_hint", hint)])
            switch response.status.code {
            case 200..<300: continue
            case 429, 500..<600: throw .transient(reason: "HTTP \(response.status.code)", retryAfter: .seconds(5))
            default: throw .invalidResponse("revocation answered HTTP \(response.status.code)")
            }
        }
    }

    // MARK: Shared

    /// POSTs `fields` with the client's credentials (RFC 6749 §2.3.1).
    func post(_ url: String, _ fields: [(String, String)], timeout: Duration? = nil) async throws(ProviderError)
        -> OAuthHTTP.Response
    {
        let (credentialFields, basicAuth) = try await credentials.present(clientID: configuration.clientID)
        let response = try await http.postForm(url, credentialFields + fields, basicAuth: basicAuth, timeout: timeout)
        // RFC 6749 §5.2: the client's own authentication failed. That is the provider file's to
        // fix, and logging in again would not help. (Naver says so under HTTP 200, hence any status.)
        if (try? JSONDecoder().decode(OAuthErrorBody.self, from: response.body))?.error == "invalid_client" {
            throw .misconfigured(
                "the provider refused sesamed's client credentials (invalid_client), a configuration problem: "
                    + credentials.refusalAdvice
            )
        }
        return response
    }

    /// A request to the token endpoint, waiting as long as one may (its answer may be the only
    /// copy of a grant), and its answer.
    func tokenRequest(_ fields: [(String, String)]) async throws(ProviderError) -> TokenResponse {
        let response = try await post(try await tokenEndpoint(), fields, timeout: configuration.tokenRequestTimeout)
        return try OAuthHTTP.classify(response, as: TokenResponse.self)
    }

    func tokenEndpoint() async throws(ProviderError) -> String {
        try await endpoint(.tokenEndpoint, for: "getting tokens")
    }

    /// One endpoint, or an error naming what is missing and which key supplies it.
    func endpoint(_ name: OAuthEndpoints.CodingKeys, for purpose: String) async throws(ProviderError) -> String {
        try await discovery.endpoints().require(name, for: purpose, discovered: discovery.discovers)
    }

    static func randomToken() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64URLEncoded
    }
}

extension DeviceAuthorization {
    /// A device authorization as the provider answered it. Shown on someone's terminal, so the
    /// provider's text is escaped and capped; RFC 8628 §3.2's interval defaults to 5 s.
    init(
        received verificationURI: String,
        complete: String?,
        userCode: String,
        expiresIn: Int,
        interval: Int?,
        deviceCode: String,
        scopes: [String],
        now: Date
    ) {
        self.init(
            verificationURI: ProviderText.sanitized(verificationURI, limit: 512),
            verificationURIComplete: complete.map { ProviderText.sanitized($0, limit: 1024) },
            userCode: ProviderText.sanitized(userCode, limit: 64),
            expiresAt: now.addingTimeInterval(TimeInterval(expiresIn)),
            interval: .seconds(max(1, interval ?? 5)),
            deviceCode: deviceCode,
            scopes: scopes
        )
    }
}

/// A device authorization response (RFC 8628 §3.2).
private struct DeviceAuthorizationResponse: Decodable {
    var deviceCode: String
    var userCode: String
    var verificationURI: String
    var verificationURIComplete: String?
    var expiresIn: Int
    var interval: Int?

    enum CodingKeys: String, CodingKey {
        case deviceCode = "device_code"
        case userCode = "user_code"
        case verificationURI = "verification_uri"
        case verificationURIComplete = "verification_uri_complete"
        case expiresIn = "expires_in"
        case interval
    }
}
