import NIOCore
import Testing

@testable import SesameVarlink

/// The connection handler's own framing: what it queues for each read, a failure, and the end.
@Suite struct MessageSplitterTests {
    private typealias Splitter = ConnectionStateMachine.MessageSplitter

    /// What `queue` holds, as text: messages as themselves, anything else by name.
    private func drain(_ queue: inout ConnectionStateMachine.InboundQueue) -> [String] {
        var items: [String] = []
        while let next = queue.popFirst() {
            switch next {
            case .message(let frame): items.append(String(buffer: frame))
            case .framingFailed(let error): items.append("failed: \(error)")
            case .inputClosed: items.append("closed")
            }
        }
        return items
    }

    @Test func queuesEveryMessageOfAReadAndKeepsTheUnfinishedOneForTheNext() {
        var splitter = Splitter(maximumMessageSize: 64)
        var queue = ConnectionStateMachine.InboundQueue()
        splitter.split(ByteBuffer(string: "{\"a\":1}\0{\"b\":2}\0{\"c\""), into: &queue)
        #expect(queue.messageBytes == 14)
        #expect(drain(&queue) == [#"{"a":1}"#, #"{"b":2}"#])
        splitter.split(ByteBuffer(string: ":3}\0"), into: &queue)
        #expect(drain(&queue) == [#"{"c":3}"#])
        #expect(queue.messageBytes == 0)
    }

    @Test func aFailureIsQueuedInItsTurnAndWhatFollowsIsDropped() {
        var splitter = Splitter(maximumMessageSize: 8)
        var queue = ConnectionStateMachine.InboundQueue()
        splitter.split(ByteBuffer(string: "{}\0" + String(repeating: "x", count: 9)), into: &queue)
        splitter.split(ByteBuffer(string: "{}\0"), into: &queue)
        splitter.endOfInput(into: &queue)
        #expect(drain(&queue) == ["{}", "failed: messageTooLarge(limit: 8)"])
    }

    @Test func anUnfinishedMessageAtTheEndOfInputIsATruncation() {
        var splitter = Splitter(maximumMessageSize: 64)
        var queue = ConnectionStateMachine.InboundQueue()
        splitter.split(ByteBuffer(string: "{}\0{\"me"), into: &queue)
        splitter.endOfInput(into: &queue)
        #expect(drain(&queue) == ["{}", "failed: truncatedMessage(bytes: 4)"])
        #expect(splitter.discardUnfinished() == nil)
    }

    /// A peer that always leaves half a message behind does not make the kept bytes grow.
    @Test func whatWasReadBeforeTheUnfinishedMessageIsNotKept() {
        var splitter = Splitter(maximumMessageSize: 64)
        var queue = ConnectionStateMachine.InboundQueue()
        splitter.split(ByteBuffer(string: "{\"x"), into: &queue)
        for _ in 0..<10_000 {
            splitter.split(ByteBuffer(string: "\":1}\0{\"x"), into: &queue)
            _ = queue.popFirst()
        }
        #expect(splitter.heldBytes < 1024)
        #expect(splitter.discardUnfinished() == 3)
    }
}
