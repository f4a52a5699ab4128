import NIOCore
import NIOEmbedded
import SesameWire
import Testing

@testable import SesameVarlink

/// How the replies of many streams on one event loop are written: in the order handed over, a
/// turn at a time, so that the loop's other work is not held up by a large fan-out.
@Suite struct ReplyBatchTests {
    /// Counts the writes that reach the channels it is added to, in the order they are made.
    private final class WriteCounter: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var writes = 0
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            writes += 1
            context.write(data, promise: promise)
        }
    }

    @Test func workHandedToTheLoopDuringAFanOutWaitsOneTurnNotTheWholeFanOut() throws {
        let loop = EmbeddedEventLoop()
        let counter = WriteCounter()
        let subscribers = 10 * ReplyBatch.repliesPerTurn
        let channels = (0..<subscribers).map { _ in EmbeddedChannel(handler: counter, loop: loop) }
        let streams = channels.map {
            VarlinkReplyStream(channel: $0, limit: 8, errorWhenBehind: VarlinkError("org.example.Behind"))
        }
        for (index, stream) in streams.enumerated() {
            #expect(stream.send(try VarlinkReply(["first": index])))
        }
        // What the call that published the event hands its loop once it is done: its reply.
        var writtenBeforeReply: Int?
        loop.execute { writtenBeforeReply = counter.writes }
        for (index, stream) in streams.enumerated() {
            #expect(stream.send(try VarlinkReply(["second": index])))
        }
        loop.run()
        #expect(writtenBeforeReply == ReplyBatch.repliesPerTurn)
        #expect(counter.writes == 2 * subscribers)
        for (index, channel) in channels.enumerated() {
            #expect(try channel.readOutbound(as: ByteBuffer.self).map(text) == reply("first", index))
            #expect(try channel.readOutbound(as: ByteBuffer.self).map(text) == reply("second", index))
        }
    }

    /// A connection whose replies come faster than a turn writes them is still sent them, a
    /// few at a time, not only once its last reply is written.
    @Test func aConnectionWhoseRepliesKeepComingIsFlushedEverySoOften() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let stream = VarlinkReplyStream(
            channel: channel,
            limit: .max,
            errorWhenBehind: VarlinkError("org.example.Behind")
        )
        let replies = 2 * ReplyBatch.repliesPerTurn + 1
        for index in 0..<replies { #expect(stream.send(try VarlinkReply(["first": index]))) }
        var sentAfterOneTurn = 0
        loop.execute {
            while (try? channel.readOutbound(as: ByteBuffer.self)) ?? nil != nil { sentAfterOneTurn += 1 }
        }
        loop.run()
        let every = VarlinkReplyStream.flushAtLeastEvery
        #expect(sentAfterOneTurn == ReplyBatch.repliesPerTurn / every * every)
    }

    /// Replies handed over faster than the loop writes them count against the stream's limit,
    /// as replies the peer does not read do: what waits for a loop is bounded.
    @Test func moreRepliesWaitingForTheLoopThanTheLimitAreFallingBehind() throws {
        let loop = EmbeddedEventLoop()
        let stream = VarlinkReplyStream(
            channel: EmbeddedChannel(loop: loop),
            limit: 4,
            errorWhenBehind: VarlinkError("org.example.Behind")
        )
        for index in 0..<4 { #expect(stream.send(try VarlinkReply(["first": index]))) }
        #expect(stream.ending == nil)
        #expect(stream.send(try VarlinkReply(["first": 4])) == false)
        #expect(stream.ending == .fellBehind)
        loop.run()
    }

    private func reply(_ name: String, _ index: Int) -> String {
        #"{"continues":true,"parameters":{"\#(name)":\#(index)}}"#
    }

    private func text(_ frame: ByteBuffer) -> String {
        String(decoding: frame.readableBytesView.dropLast(), as: UTF8.self)
    }
}
