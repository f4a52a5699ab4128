import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import SesameWire
import Testing

@testable import SesameVarlink

/// A gate that admits `limit` connections at a time and counts what it was asked.
private final class CountingGate: VarlinkConnectionGate {
    private struct Counts {
        var asked = 0
        var open = 0
    }

    private let limit: Int
    private let counts = NIOLockedValueBox(Counts())

    init(limit: Int) { self.limit = limit }

    var asked: Int { counts.withLockedValue { $0.asked } }
    var open: Int { counts.withLockedValue { $0.open } }

    func admit(_ peer: PeerCredentials) -> VarlinkError? {
        counts.withLockedValue { counts in
            counts.asked += 1
            guard counts.open < limit else { return VarlinkError("test.Protocol.TooManyConnections") }
            counts.open += 1
            return nil
        }
    }

    func release(_ peer: PeerCredentials) {
        counts.withLockedValue { $0.open -= 1 }
    }
}

/// A blocking connection with nothing in between, as a C client or a script makes one; used
/// off the cooperative pool (`blocking`), whose threads the server's calls need.
private struct PlainConnection {
    let descriptor: Int32

    init(_ path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        // A server that never answers fails the test instead of hanging it.
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = try #require(UnixSocketPath.address(of: path))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(connected == 0)
    }

    /// Sends one message and reads one reply (up to its NUL), or what came before the end.
    func call(_ message: String) -> String {
        let frame = Array(message.utf8) + [0]
        _ = frame.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var byte: UInt8 = 0
        while recv(descriptor, &byte, 1, 0) == 1, byte != 0 { reply.append(byte) }
        return String(decoding: reply, as: UTF8.self)
    }

    func close() { _ = Glibc.close(descriptor) }
}

@Suite struct ConnectionAcceptorTests {
    private static let echo = #"{"method":"org.example.test.Echo","parameters":{"text":"hi"}}"#

    /// Runs `work`, which blocks, on a thread for blocking work.
    private static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    @Test func aConnectionClosedUnusedNeverReachesTheGateOrAnEventLoop() async throws {
        let gate = CountingGate(limit: 16)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("acceptor-\(UUID().uuidString)").path
        defer { unlink(path) }
        let server = try await VarlinkServer.bind(
            .path(path, mode: 0o600),
            configuration: .init(
                info: .init(vendor: "Test", product: "test", version: "1", url: ""),
                protocolInterface: "test.Protocol",
                connectionGate: gate
            ),
            interfaces: [TestInterface()],
            logger: Logger(label: "test")
        )
        // Queued before the server accepts any, so each has surely ended when it is accepted
        // (fewer than the smallest listen queue a kernel may grant, 128).
        try await Self.blocking { for _ in 0..<100 { try PlainConnection(path).close() } }
        let running = Task { try await server.run() }
        let reply = try await Self.blocking {
            let live = try PlainConnection(path)
            defer { live.close() }
            return live.call(Self.echo)
        }
        #expect(reply.contains(#""text":"hi""#))
        server.shutdown()
        try await running.value
        // Only the connection that sent a call was looked at, and it was given back.
        #expect(gate.asked == 1)
        #expect(gate.open == 0)
    }

    @Test func everyRefusedConnectionReadsItsRefusalAsTheReply() async throws {
        // More refusals than may linger on an event loop: the rest are answered at accept.
        let gate = CountingGate(limit: 0)
        try await withServer(gate: gate) { path in
            let replies = try await Self.blocking {
                let connections = try (0..<100).map { _ in try PlainConnection(path) }
                defer { for connection in connections { connection.close() } }
                return connections.map { $0.call(Self.echo) }
            }
            #expect(replies.allSatisfy { $0.contains("test.Protocol.TooManyConnections") })
        }
        #expect(gate.asked == 100)
    }
}
