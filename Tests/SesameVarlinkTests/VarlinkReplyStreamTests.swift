import Foundation
import Logging
import Testing

@testable import SesameVarlink

/// An interface whose `Feed` sends `n` replies through a reply stream and leaves the call to it;
/// how each stream ended is reported on `endings`.
private struct FeedingInterface: VarlinkInterface {
    let name = "org.example.feed"
    let interfaceDescription = """
        interface org.example.feed
        method Feed(n: int) -> (i: int)
        error Behind ()

        """
    let endings: AsyncStream<VarlinkReplyStream.Ending>.Continuation

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        struct Count: Decodable { var n: Int }
        let n = try call.decodeParameters(Count.self).n
        guard
            let stream = await context.replyStream(
                fallingBehindAfter: 8,
                then: VarlinkError("org.example.feed.Behind")
            )
        else { throw VarlinkError.expectedMore }
        for i in 0..<n { #expect(stream.send(try VarlinkReply(["i": i]))) }
        let endings = self.endings
        stream.whenEnded { endings.yield($0) }
        return .continuing(on: stream)
    }
}

@Suite struct VarlinkReplyStreamTests {
    /// A call left to its stream goes on with no handler: its replies arrive in order, and it
    /// ends when the peer hangs up, or, cancelled, when the server stops.
    @Test func aCallLeftToItsStreamGoesOnUntilTheHangUpOrTheStop() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("varlink-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("test.socket").path
        defer { try? FileManager.default.removeItem(at: directory) }
        let (endings, ended) = AsyncStream<VarlinkReplyStream.Ending>.makeStream()
        var reported = endings.makeAsyncIterator()
        let server = try await VarlinkServer.bind(
            .path(path, mode: 0o600),
            configuration: .init(
                info: .init(vendor: "Test", product: "test", version: "1", url: ""),
                protocolInterface: "test.Protocol"
            ),
            interfaces: [FeedingInterface(endings: ended)],
            logger: Logger(label: "test")
        )
        let running = Task { try await server.run() }

        let leaving = try await VarlinkClient.connect(unixSocketPath: path)
        var received: [JSONValue?] = []
        for try await reply in try await leaving.stream("org.example.feed.Feed", parameters: ["n": 3]) {
            #expect(reply.continues)
            received.append(reply.parameters["i"])
            if received.count == 3 { break }
        }
        #expect(received == [0, 1, 2])
        #expect(await reported.next() == .gone)

        let staying = try await VarlinkClient.connect(unixSocketPath: path)
        var replies = try await staying.stream("org.example.feed.Feed", parameters: ["n": 1]).makeAsyncIterator()
        #expect(try await replies.next()?.parameters["i"] == 0)
        server.shutdown()
        #expect(await reported.next() == .cancelled)
        while let _ = try? await replies.next() {}
        try await running.value
        for client in [leaving, staying] { await client.close() }
    }
}
