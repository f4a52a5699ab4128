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

    /// The adapter the provider file's `type` selects, sending over `transport`.
    public static func adapter(for configuration: ProviderConfiguration, transport: any HTTPTransport)
        -> any ProviderAdapter
    {
        switch configuration.kind {
        case .oidc: GenericOIDCProvider(configuration: configuration, transport: transport)
        case .kakao(let settings): KakaoProvider(configuration: configuration, settings: settings, transport: transport)
        case .naver(let settings): NaverProvider(configuration: configuration, settings: settings, transport: transport)
        case .google: GoogleProvider(configuration: configuration, transport: transport)
        case .apple(let settings): AppleProvider(configuration: configuration, settings: settings, transport: transport)
        }
    }
}
