import NIOCore
import NIOEmbedded
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

    private func reply(_ name: String, _ index: Int) -> String {
        #"{"continues":true,"parameters":{"\#(name)":\#(index)}}"#
    }

    private func text(_ frame: ByteBuffer) -> String {
        String(decoding: frame.readableBytesView.dropLast(), as: UTF8.self)
    }
}
