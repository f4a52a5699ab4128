import AsyncHTTPClient
import NIOCore
import Testing

@testable import SesameProviders

#if canImport(Glibc)
    import Glibc
#endif

/// A request that never reached the provider is told in the system's words, with the address it
/// went to, not by the error's type name.
@Suite struct UnreachedProviderTests {
    @Test func aRefusedConnectionNamesTheAddressItWasRefusedBy() {
        let refused = IOError(errnoCode: ECONNREFUSED, reason: "connect")
        #expect(
            UnreachedProvider.reason(refused, url: "http://127.0.0.1:18601/token")
                == "connection refused by 127.0.0.1:18601"
        )
    }

    @Test func otherSystemErrorsAreSaidInTheSystemsWords() {
        let unreachable = IOError(errnoCode: ENETUNREACH, reason: "connect")
        #expect(
            UnreachedProvider.reason(unreachable, url: "https://id.example/token")
                == "cannot connect to id.example:443: network is unreachable"
        )
    }

    @Test func whatTheHTTPClientThrowsForAClosedPortIsSaidSo() async throws {
        // The daemon's own client against a port of this machine nothing listens on (discard):
        // it tries to connect again until the deadline, then throws the last failure.
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let url = "http://127.0.0.1:9/token"
        do {
            _ = try await client.send(
                TransportRequest(method: .GET, url: url, headers: [:]),
                timeout: .seconds(1),
                maximumBody: 1
            )
            Issue.record("something answered on port 9")
        } catch {
            #expect(UnreachedProvider.reason(error, url: url) == "connection refused by 127.0.0.1:9")
        }
        try await client.shutdown()
    }

    @Test func theAddressTakesTheSchemesPortAndBracketsAnIPv6Host() {
        #expect(UnreachedProvider.address(of: "http://localhost/x") == "localhost:80")
        #expect(UnreachedProvider.address(of: "https://[::1]:8443/x") == "[::1]:8443")
        #expect(UnreachedProvider.address(of: "not a url") == "the provider")
    }

    @Test func anythingElseNamesTheAddressAndTheKindOfFailure() {
        #expect(
            UnreachedProvider.reason(HTTPClientError.invalidURL, url: "https://id.example/token")
                == "cannot reach id.example:443 (HTTPClientError)"
        )
    }
}
