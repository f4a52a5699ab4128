import Foundation
import Logging
import NIOCore
import NIOPosix
import SesameVarlinkTesting
import SesameWire
import Synchronization
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
    /// Where the last stream is watched from, without keeping it.
    var watch: StreamWatch? = nil

    struct Count: Codable, Sendable { var n: Int }

    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.answer(VarlinkMethod<Count, [String: Int]>("Feed", of: name)) { try await feed($0.n, $1) }
        return methods
    }

    private func feed(_ n: Int, _ context: VarlinkCallContext) async throws -> VarlinkAnswer<[String: Int]> {
        guard
            let stream = await context.replyStream(
                fallingBehindAfter: 8,
                then: VarlinkError("org.example.feed.Behind")
            )
        else { throw VarlinkError.expectedMore }
        for i in 0..<n { #expect(stream.send(try VarlinkReply(["i": i]))) }
        let endings = self.endings
        stream.whenEnded { endings.yield($0) }
        watch?.watch(stream)
        return .continuing(on: stream)
    }
}

/// Holds a stream weakly, to see that it is released.
private final class StreamWatch: Sendable {
    private struct Weak { weak var stream: VarlinkReplyStream? }
    private let watched = Mutex(Weak())

    func watch(_ stream: VarlinkReplyStream) { watched.withLock { $0.stream = stream } }
    var isReleased: Bool { watched.withLock { $0.stream == nil } }
}

/// An interface whose `Join` hands its reply stream to the test on `joined` and leaves the call
/// to it.
private struct JoiningInterface: VarlinkInterface {
    let name = "org.example.join"
    let interfaceDescription = """
        interface org.example.join
        method Join() -> (i: int)
        error Behind ()

        """
    let joined: AsyncStream<VarlinkReplyStream>.Continuation

    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.answer(VarlinkMethod<[String: JSONValue], [String: Int]>("Join", of: name)) { _, context in
            try await join(context)
        }
        return methods
    }

    private func join(_ context: VarlinkCallContext) async throws -> VarlinkAnswer<[String: Int]> {
        guard
            let stream = await context.replyStream(
                fallingBehindAfter: 64,
                then: VarlinkError("org.example.join.Behind")
            )
        else { throw VarlinkError.expectedMore }
        joined.yield(stream)
        return .continuing(on: stream)
    }
}

@Suite struct VarlinkReplyStreamTests {
    /// One reply framed once and sent to many streams, as an event is to its subscribers, reaches
    /// each of them, in order with each stream's own replies around it.
    @Test(.timeLimit(.minutes(1))) func aReplySharedByManyStreamsReachesEachInOrder() async throws {
        let (joins, joined) = AsyncStream<VarlinkReplyStream>.makeStream()
        var newlyJoined = joins.makeAsyncIterator()
        let test = try await TestServer.start([JoiningInterface(joined: joined)])
        var clients: [VarlinkClient] = []
        var replies: [AsyncThrowingStream<VarlinkReplyMessage, any Error>.AsyncIterator] = []
        var streams: [VarlinkReplyStream] = []
        for _ in 0..<16 {
            let client = try await VarlinkClient.connect(unixSocketPath: test.path)
            replies.append(try await client.stream("org.example.join.Join").makeAsyncIterator())
            streams.append(try #require(await newlyJoined.next()))
            clients.append(client)
        }
        let shared = try VarlinkReply(["i": 0]).framed(continues: true)
        for _ in 0..<3 {
            for stream in streams { #expect(stream.send(shared)) }
            for (index, stream) in streams.enumerated() {
                #expect(stream.send(try VarlinkReply(["i": index + 1])))
            }
        }
        for index in replies.indices {
            var received: [JSONValue?] = []
            for _ in 0..<6 { received.append(try await replies[index].next()?.parameters["i"]) }
            let own = JSONValue.int(Int64(index + 1))
            #expect(received == [0, own, 0, own, 0, own])
        }
        test.server.shutdown()
        try await test.stopped()
        for client in clients { await client.close() }
    }

    /// A call left to its stream goes on with no handler: its replies arrive in order, and it
    /// ends when the peer hangs up, or, cancelled, when the server stops.
    @Test func aCallLeftToItsStreamGoesOnUntilTheHangUpOrTheStop() async throws {
        let (endings, ended) = AsyncStream<VarlinkReplyStream.Ending>.makeStream()
        var reported = endings.makeAsyncIterator()
        let test = try await TestServer.start([FeedingInterface(endings: ended)])
        let (server, path) = (test.server, test.path)

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
        try await test.stopped()
        for client in [leaving, staying] { await client.close() }
    }

    /// A stream its connection's handler took over writes through the handler's place in the
    /// pipeline, and lets go of it once the connection has closed: neither outlives the peer.
    @Test func aStreamIsReleasedWithItsConnection() async throws {
        let (endings, ended) = AsyncStream<VarlinkReplyStream.Ending>.makeStream()
        var reported = endings.makeAsyncIterator()
        let watch = StreamWatch()
        let test = try await TestServer.start([FeedingInterface(endings: ended, watch: watch)])
        let (server, path) = (test.server, test.path)

        let client = try await VarlinkClient.connect(unixSocketPath: path)
        for try await reply in try await client.stream("org.example.feed.Feed", parameters: ["n": 1]) {
            #expect(reply.parameters["i"] == 0)
            break
        }
        #expect(await reported.next() == .gone)
        // The closed channel's handlers are removed on its loop after it went inactive: a few
        // turns of every loop, not a wait on the clock.
        for _ in 0..<8 where !watch.isReleased {
            for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() { try await loop.submit {}.get() }
        }
        #expect(watch.isReleased)
        server.shutdown()
        try await test.stopped()
        await client.close()
    }
}
