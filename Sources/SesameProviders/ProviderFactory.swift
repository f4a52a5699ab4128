import AsyncHTTPClient
import NIOSSL

/// Builds provider adapters and the HTTP clients they use.
public enum ProviderFactory {
    /// An HTTP client that verifies TLS against the system roots, and `caFile` too for a private
    /// issuer. It does not retry failed connection attempts until the deadline (the library's
    /// default): a certificate that does not verify is reported at once, and the engine's own
    /// backoff paces retries. The caller shuts it down when done with it.
    public static func httpClient(caFile: String?) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caFile)]
            configuration.tlsConfiguration = tls
        }
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The adapter the provider file's `type` selects.
    public static func adapter(for configuration: ProviderConfiguration, client: HTTPClient) -> any ProviderAdapter {
        switch configuration.kind {
        case .oidc: GenericOIDCProvider(configuration: configuration, client: client)
        case .kakao(let settings): KakaoProvider(configuration: configuration, settings: settings, client: client)
        case .naver(let settings): NaverProvider(configuration: configuration, settings: settings, client: client)
        case .google: GoogleProvider(configuration: configuration, client: client)
        case .apple(let settings): AppleProvider(configuration: configuration, settings: settings, client: client)
        }
    }
}
