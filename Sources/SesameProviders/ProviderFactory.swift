import AsyncHTTPClient
import NIOSSL

/// Builds provider adapters and the HTTP clients they share.
public enum ProviderFactory {
    /// An HTTP client that verifies TLS against the system roots, or against `caFile` for a
    /// private issuer. The caller shuts a client it made here down when done with it; the
    /// shared client (no CA file) needs no shutdown.
    public static func httpClient(caFile: String?) -> (client: HTTPClient, owned: Bool) {
        guard let caFile else { return (HTTPClient.shared, false) }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caFile)
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(tlsConfiguration: tls)
        )
        return (client, true)
    }

    /// The adapter for `configuration`: the generic OpenID Connect provider.
    public static func adapter(for configuration: ProviderConfiguration, client: HTTPClient) -> any ProviderAdapter {
        GenericOIDCProvider(configuration: configuration, client: client)
    }
}
