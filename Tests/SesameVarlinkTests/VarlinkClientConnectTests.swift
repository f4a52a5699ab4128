import Foundation
import Testing

@testable import SesameVarlink

#if canImport(Glibc)
    import Glibc
#endif

/// A server whose queue of unaccepted connections is full is busy, not gone: the client tries
/// again instead of failing at once (a Unix socket's connect fails with EAGAIN then).
struct VarlinkClientConnectTests {
    @Test func aFullListenQueueIsWaitedOutNotReportedAsNothingListening() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("s").path
        let listener = try Self.listen(at: path)
        defer { close(listener) }
        // Fill the queue: with a backlog of 0 the kernel queues one connection, then says EAGAIN.
        var queued: [Int32] = []
        defer { queued.forEach { _ = close($0) } }
        while let connection = Self.connectWithoutWaiting(to: path) { queued.append(connection) }
        #expect(!queued.isEmpty)

        let connecting = Task { try await VarlinkClient.connect(unixSocketPath: path) }
        // The accept comes a moment later, as a busy server's does; the client must still be
        // trying then (it tries for VarlinkClient.busyPatience).
        try await Task.sleep(for: .milliseconds(100))
        // Taking the queued connections off makes room; the client's is then queued in turn.
        var accepted: [Int32] = []
        defer { accepted.forEach { _ = close($0) } }
        for _ in queued {
            accepted.append(try Self.acceptOne(listener))
        }
        let client = try await connecting.value
        await client.close()
    }

    private static func listen(at path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = withAddress(of: path) { bind(descriptor, $0, $1) }
        guard bound == 0, Glibc.listen(descriptor, 0) == 0 else { throw POSIXError(.EADDRINUSE) }
        return descriptor
    }

    /// Calls `body` with `path` as a Unix socket address and its length.
    private static func withAddress(of path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path.utf8.prefix(bytes.count - 1))
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A non-blocking connection to `path`; nil once the kernel refuses (EAGAIN: the queue is full).
    private static func connectWithoutWaiting(to path: String) -> Int32? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        let connected = withAddress(of: path) { connect(descriptor, $0, $1) }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// The next connection in the queue (one is there: it was queued before).
    private static func acceptOne(_ listener: Int32) throws -> Int32 {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { throw POSIXError(.ECONNABORTED) }
        return connection
    }
}
