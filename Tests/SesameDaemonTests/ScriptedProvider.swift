import Foundation
import SesameCore
import SesameProtocol
import Synchronization

@testable import SesameProviders

/// A provider that answers as its test tells it to, and counts what it was asked.
final class ScriptedProvider: ProviderAdapter {
    struct Script {
        var login: Result<ProviderLogin, ProviderError> = .success(ScriptedProvider.login(subject: "alice"))
        var refresh: Result<TokenSet, RefreshError> = .success(ScriptedProvider.tokens("AT-2", refresh: "RT-2"))
        var revoke: Result<Void, ProviderError> = .success(())
        var check: Result<AccessTokenCheck, ProviderError> = .success(.accepted)
        var flows: [ProviderConfiguration.Flow] = ProviderConfiguration.Flow.allCases
    }

    let configuration: ProviderConfiguration
    let script: Mutex<Script>
    let revoked = Mutex<[TokenSet]>([])
    private let refreshes = Mutex(0)
    private let verifications = Mutex(0)

    /// How many handed-over token sets the provider was asked to verify.
    var verificationCount: Int { verifications.withLock { $0 } }

    /// How many refreshes the provider was asked for.
    var refreshCount: Int { refreshes.withLock { $0 } }

    init(name: String = "scripted", script: Script = Script()) {
        configuration = ProviderConfiguration(name: name, clientID: "client", flow: .device)
        self.script = Mutex(script)
    }

    static func tokens(_ access: String, refresh: String? = "RT-1", lifetime: TimeInterval = 3600) -> TokenSet {
        TokenSet(
            accessToken: access,
            refreshToken: refresh,
            tokenType: "Bearer",
            accessTokenExpiresAt: Date(timeIntervalSince1970: 1_800_000_000 + lifetime),
            scopes: ["openid"]
        )
    }

    static func login(subject: String) -> ProviderLogin {
        ProviderLogin(tokens: tokens("AT-1"), subject: subject, displayName: subject.capitalized)
    }

    var loginFlows: [ProviderConfiguration.Flow] { script.withLock { $0.flows } }

    func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization {
        DeviceAuthorization(
            verificationURI: "https://id.example/device",
            verificationURIComplete: nil,
            userCode: "WDJB-MJHT",
            expiresAt: Date(timeIntervalSince1970: 1_800_000_600),
            interval: .seconds(5),
            deviceCode: "device-code",
            scopes: scopes ?? []
        )
    }

    func finishDeviceLogin(_ authorization: DeviceAuthorization, polling: DevicePolling)
        async throws(ProviderError) -> ProviderLogin
    {
        try script.withLock { $0.login }.get()
    }

    func startAuthorizationCodeLogin(redirectURI: String, scopes: [String]?) async throws(ProviderError)
        -> AuthorizationRequest
    {
        AuthorizationRequest(
            url: "https://id.example/authorize?state=s-\(redirectURI.count)",
            state: "state-\(UUID().uuidString)",
            redirectURI: redirectURI,
            codeVerifier: "verifier",
            nonce: "",
            scopes: scopes ?? []
        )
    }

    func finishAuthorizationCodeLogin(_ request: AuthorizationRequest, code: String) async throws(ProviderError)
        -> ProviderLogin
    {
        try script.withLock { $0.login }.get()
    }

    func redeemCode(_ handover: HandedOverCode) async throws(ProviderError) -> ProviderLogin {
        try script.withLock { $0.login }.get()
    }

    func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        revoked.withLock { $0.append(tokens) }
        try script.withLock { $0.revoke }.get()
    }

    func verifyHandedOver(_ tokens: TokenSet, subject: String) async throws(ProviderError) {
        verifications.withLock { $0 += 1 }
    }

    func checkAccessToken(_ tokens: TokenSet, subject: String) async throws(ProviderError) -> AccessTokenCheck {
        try script.withLock { $0.check }.get()
    }

    func checkConfiguration(pay: @escaping DevicePolling.Payment) async -> [ProviderCheck] {
        [.passed("token endpoint", key: "endpoints.token", "scripted")]
    }

    func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        refreshes.withLock { $0 += 1 }
        return try script.withLock { $0.refresh }.get()
    }
}

extension ScriptedProvider {
    /// ImportTokens' parameters for tokens of this provider about `subject`, owned by the caller.
    func importParameters(subject: String, access: String, refresh: String, expiresIn: Int64) -> ImportTokensParameters
    {
        ImportTokensParameters(
            provider: name,
            subject: subject,
            displayName: nil,
            owner: nil,
            tokens: Tokens(accessToken: access, refreshToken: refresh, expiresIn: expiresIn)
        )
    }
}
