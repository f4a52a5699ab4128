import Foundation
import Logging
import SesameVarlink

/// A server on a socket of its own in a fresh temporary directory, running until
/// `server.shutdown()`; `stopped()` then waits for it and removes the directory.
public struct TestServer: Sendable {
    /// The socket's path.
    public let path: String
    /// The server, to shut down.
    public let server: VarlinkServer
    private let directory: URL
    private let running: Task<Void, any Error>

    /// Binds a server for `interfaces` and starts it.
    public static func start(_ interfaces: [any VarlinkInterface]) async throws -> TestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("varlink-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("test.socket").path
        let server = try await VarlinkServer.bind(
            .path(path, mode: 0o600),
            configuration: .init(
                info: .init(vendor: "Test", product: "test", version: "1", url: ""),
                protocolInterface: "test.Protocol"
            ),
            interfaces: interfaces,
            logger: Logger(label: "test")
        )
        return TestServer(path: path, server: server, directory: directory, running: Task { try await server.run() })
    }

    /// Waits for the server to end (after `server.shutdown()`), then removes its directory.
    public func stopped() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try await running.value
    }
}
