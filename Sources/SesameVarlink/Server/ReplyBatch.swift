import NIOConcurrencyHelpers
import NIOCore

/// The replies handed to one event loop's streams and not yet written, in the order they were
/// handed over: the first one schedules a turn on the loop, which writes at most
/// `repliesPerTurn` of them, each connection flushed after its last, and schedules the next turn
/// if more are left; those handed over meanwhile join the end of the line. So an event written to
/// ten thousand subscribers leaves room between turns for the loop's other tasks: the reply to
/// the call that caused it waits one turn, not the whole fan-out. (Reading waits for the whole
/// line, as the loop runs all its tasks before it looks at its sockets again.) A connection whose
/// replies keep coming is flushed every `VarlinkReplyStream.flushAtLeastEvery` replies.
final class ReplyBatch: Sendable {
    /// Replies written per turn on the loop: a few hundred microseconds of writing.
    static let repliesPerTurn = 128

    private let loop: any EventLoop
    /// The line. A turn is scheduled exactly while it is not empty: the reply that finds it
    /// empty schedules one, and a turn that leaves replies schedules the next. While a turn is
    /// scheduled only it writes, so the order holds.
    private let pending = NIOLockedValueBox(CircularBuffer<(VarlinkReplyStream, ByteBuffer)>())

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    private static let batches = NIOLockedValueBox<[ObjectIdentifier: ReplyBatch]>([:])

    /// The batch of `loop`, one per loop for the life of the process (loops are few and fixed).
    static func forLoop(_ loop: any EventLoop) -> ReplyBatch {
        batches.withLockedValue { batches in
            let key = ObjectIdentifier(loop as AnyObject)
            if let batch = batches[key] { return batch }
            let batch = ReplyBatch(loop: loop)
            batches[key] = batch
            return batch
        }
    }

    /// Queues `frame` for `stream`, behind everything handed over before it, and schedules a
    /// turn on the loop if none is scheduled.
    func add(_ frame: ByteBuffer, to stream: VarlinkReplyStream) {
        let schedule = pending.withLockedValue { pending in
            pending.append((stream, frame))
            return pending.count == 1
        }
        if schedule { loop.execute { self.writeTurn() } }
    }

    /// Writes the next `repliesPerTurn` replies, and schedules the next turn if more are
    /// queued.
    private func writeTurn() {
        let (turn, more) = pending.withLockedValue { pending in
            let count = min(pending.count, Self.repliesPerTurn)
            let turn = Array(pending.prefix(count))
            pending.removeFirst(count)
            return (turn, !pending.isEmpty)
        }
        for (stream, frame) in turn { stream.writeOnLoop(frame) }
        if more { loop.execute { self.writeTurn() } }
    }
}
