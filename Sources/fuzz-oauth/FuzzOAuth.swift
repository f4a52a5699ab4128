import Crypto
import Foundation
import SesameCore
import SesameFuzzing
import SesameProtocol
import SesameProviders

/// What the requests carry and no error may ever repeat, whatever the provider answers back.
private enum Secret {
    static let clientSecret = "fuzz-client-secret"
    static let accessToken = "fuzz-access-token"
    static let refreshToken = "fuzz-refresh-token"
    static let code = "fuzz-code"

    /// The secrets operation `operation` (see `run`) hands the provider: only those can leak.
    static func carried(by operation: Int) -> [String] {
        switch operation {
        case 0: [clientSecret]
        case 1, 5: [clientSecret, code]
        case 4: [clientSecret, accessToken]
        default: [clientSecret, accessToken, refreshToken]
        }
    }
}

/// Where the fuzzed issuer says its endpoints are.
private let fuzzIssuer = "https://issuer.example"

/// Every endpoint of the fuzzed issuer, for the adapters that are not told by discovery.
private let fuzzEndpoints = OAuthEndpoints(
    tokenEndpoint: fuzzIssuer + "/token",
    deviceAuthorizationEndpoint: fuzzIssuer + "/device",
    authorizationEndpoint: fuzzIssuer + "/authorize",
    revocationEndpoint: fuzzIssuer + "/revoke",
    jwksURI: fuzzIssuer + "/jwks",
    userinfoEndpoint: fuzzIssuer + "/userinfo",
    issuer: fuzzIssuer
)

/// A provider file's configuration for the fuzzed issuer.
private func configuration(
    _ kind: ProviderKind,
    discovery: Bool = false,
    endpoints: OAuthEndpoints = fuzzEndpoints
) -> ProviderConfiguration {
    ProviderConfiguration(
        name: "fuzz",
        kind: kind,
        issuer: fuzzIssuer,
        discovery: discovery,
        endpoints: endpoints,
        clientID: "fuzz-client",
        clientSecret: Secret.clientSecret
    )
}

/// One adapter of each kind, pointed at endpoints the fuzz transport answers for.
private func adapter(_ choice: Int, transport: FuzzTransport, clock: InstantClock) -> any ProviderAdapter {
    switch choice {
    case 0:
        let discovered = configuration(.oidc, discovery: true, endpoints: OAuthEndpoints())
        return GenericOIDCProvider(configuration: discovered, transport: transport, clock: clock)
    case 1: return GenericOIDCProvider(configuration: configuration(.oidc), transport: transport, clock: clock)
    case 2: return GoogleProvider(configuration: configuration(.google), transport: transport, clock: clock)
    case 3:
        let settings = KakaoProvider.Settings()
        return KakaoProvider(
            configuration: configuration(.kakao(settings)),
            settings: settings,
            transport: transport,
            clock: clock
        )
    case 4:
        let settings = NaverProvider.Settings()
        return NaverProvider(
            configuration: configuration(.naver(settings), endpoints: NaverProvider.endpoints),
            settings: settings,
            transport: transport,
            clock: clock
        )
    default:
        let settings = AppleProvider.Settings(teamID: "TEAM", keyID: "KEY", privateKey: appleKey)
        return AppleProvider(
            configuration: configuration(.apple(settings)),
            settings: settings,
            transport: transport,
            clock: clock
        )
    }
}

/// The key Apple's client secret is signed with, made once per process.
private let appleKey = P256.Signing.PrivateKey().pemRepresentation

/// Runs one provider operation against answers taken from the input, and checks that no error
/// it ends with repeats a secret the requests carried.
func fuzzOAuth(_ buffer: UnsafeRawBufferPointer) {
    var input = FuzzInput(buffer)
    let providerChoice = input.choice(6)
    let operation = input.choice(6)
    let transport = FuzzTransport(&input)
    let clock = InstantClock()
    let provider = adapter(providerChoice, transport: transport, clock: clock)
    runBlocking {
        do {
            try await run(operation, on: provider, clock: clock)
        } catch {
            let started = (error as? StartError).map { $0.error }
            let shown = "\(started ?? error) \(String(reflecting: started ?? error))"
            let carried = started == nil ? Secret.carried(by: operation) : Secret.carried(by: 0)
            for secret in carried where shown.contains(secret) {
                // The secrets are the fuzzer's own made-up values, so showing where one leaked is safe.
                preconditionFailure("an error repeats the secret \(secret): \(shown)")
            }
        }
    }
}

/// An authorization-code login failed before the code was sent.
private struct StartError: Error {
    let error: any Error
}

/// One operation, as the daemon would call it.
private func run(_ operation: Int, on provider: any ProviderAdapter, clock: InstantClock) async throws {
    let tokens = TokenSet(
        accessToken: Secret.accessToken,
        refreshToken: Secret.refreshToken,
        idToken: nil,
        accessTokenExpiresAt: clock.now.addingTimeInterval(3600)
    )
    switch operation {
    case 0:
        let authorization = try await provider.startDeviceLogin(scopes: nil)
        _ = try await provider.finishDeviceLogin(authorization, polling: .unpaid)
    case 1:
        // The code is only given to the provider (and exists at all) once the login is started:
        // an error in starting it can only repeat what starting carries.
        let request: AuthorizationRequest
        do {
            request = try await provider.startAuthorizationCodeLogin(
                redirectURI: "http://127.0.0.1:4000/callback",
                scopes: ["openid"]
            )
        } catch {
            throw StartError(error: error)
        }
        _ = try await provider.finishAuthorizationCodeLogin(request, code: Secret.code)
    case 2:
        let account = Account(
            id: "a1",
            provider: "fuzz",
            ownerUID: 0,
            subject: "alice",
            state: .active,
            createdAt: clock.now
        )
        _ = try await provider.refresh(account, tokens: tokens)
    case 3:
        try await provider.revoke(tokens)
    case 4:
        try await provider.verifyHandedOver(tokens, subject: "alice")
    default:
        _ = try await provider.redeemCode(
            HandedOverCode(code: Secret.code, redirectURI: "http://127.0.0.1:4000/callback", codeVerifier: "verifier")
        )
    }
}

/// Runs the target under libFuzzer (scripts/fuzz) or over corpus files.
@main
enum FuzzOAuthMain {
    static func main() {
        FuzzMain.run { data, size in
            fuzzOAuth(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
    }
}
