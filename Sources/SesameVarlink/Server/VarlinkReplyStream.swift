import NIOConcurrencyHelpers
import NIOCore
import SesameWire
import Synchronization

/// The intermediate replies of one streaming call, sent from any thread without waiting: each
/// is handed to the connection's event loop, which writes every reply handed to it since it
/// last looked in one go, for all its connections. For a call that sends the same replies to
/// many peers (an event to every subscriber), where a task woken and a hop to the loop per
/// reply cost more than the write. Its handler returns `VarlinkAnswer.continuing(on:)` and the
/// call goes on with no task until the stream ends: the peer hangs up, the server stops, or
/// the peer reads nothing while more than `limit` replies pile up behind its socket (or more
/// than `limit` wait for the loop to write them), which ends the call with `errorWhenBehind`. A handler that takes a stream must return it so (or
/// `cancel` it): only then does the connection's handler know of it, and end it when the
/// channel closes. Every idle subscriber keeps one, so it holds no more than it must:
/// no callback on the channel's close, and its end reaches the connection's handler through
/// the channel's pipeline (`Ended`). A call answered in process (`VarlinkMethods.answer`)
/// streams the same way, its replies handed to the caller at once and its end awaited.
public final class VarlinkReplyStream: Sendable {
    /// Why a stream ended.
    public enum Ending: Sendable, Equatable {
        /// The peer hung up (closed, or shut down its sending side), or the connection was closed.
        case gone
        /// The call was cancelled: the server is stopping.
        case cancelled
        /// The peer fell more than `limit` replies behind.
        case fellBehind
    }

    /// Sent up the connection's pipeline, on its loop, once the stream has ended.
    struct Ended: Sendable {
        let stream: VarlinkReplyStream
        let ending: Ending
    }

    private struct State {
        var ending: Ending?
        /// Who is told of the end: most streams have one, kept in place, and rarely more.
        var whenEnded: (@Sendable (Ending) -> Void)?
        var moreWhenEnded: [@Sendable (Ending) -> Void] = []
        /// Replies written while the peer was not reading (its connection over the high-water
        /// mark); reset once it reads again. Touched on the event loop only (in process, on
        /// the thread that sends).
        var behind = 0
        /// Replies handed to the batch and not yet written: the last of them is flushed.
        var queued = 0
        /// Replies written and not yet flushed, while more are queued. Touched on the loop only.
        var unflushed = 0
    }

    /// How many replies are written at most before a flush, when more keep coming: a burst
    /// of events goes out in few writes, and a connection whose replies never stop coming is
    /// still sent them.
    static let flushAtLeastEvery = 16

    /// Where the replies go: a connection's channel, written by its loop's batch, or an
    /// in-process caller, which is handed each at once and says whether it is keeping up.
    private enum Target: Sendable {
        case connection(any Channel, ReplyBatch)
        case inProcess(InProcessReplies)
    }

    private let target: Target
    /// The connection handler's place in the pipeline, from the hand-off until the handler lets
    /// go of the stream: replies enter the pipeline there, not at its tail, and so skip the
    /// handler's own pass-through (a third of NIO's cost per write to an idle subscriber).
    /// Only touched on the channel's loop, where the handler sets it and the batch writes.
    nonisolated(unsafe) private var entry: ChannelHandlerContext?
    private let limit: Int
    /// The call's final reply when the peer fell behind.
    let errorWhenBehind: VarlinkError
    private let state = Mutex(State())

    init(channel: any Channel, limit: Int, errorWhenBehind: VarlinkError) {
        self.target = .connection(channel, ReplyBatch.forLoop(channel.eventLoop))
        self.limit = limit
        self.errorWhenBehind = errorWhenBehind
    }

    init(inProcess replies: InProcessReplies, limit: Int, errorWhenBehind: VarlinkError) {
        self.target = .inProcess(replies)
        self.limit = limit
        self.errorWhenBehind = errorWhenBehind
    }

    /// The connection's channel; nil in process.
    private var channel: (any Channel)? {
        if case .connection(let channel, _) = target { channel } else { nil }
    }

    /// How the stream ended; nil while it goes on.
    var ending: Ending? {
        state.withLock { $0.ending }
    }

    /// Runs `body` once the stream has ended (at once if it has), with why: where a handler
    /// that left its call to the stream lets go of what the call held.
    public func whenEnded(_ body: @escaping @Sendable (Ending) -> Void) {
        let ended = state.withLock { state -> Ending? in
            if let ending = state.ending { return ending }
            if state.whenEnded == nil {
                state.whenEnded = body
            } else {
                state.moreWhenEnded.append(body)
            }
            return nil
        }
        if let ended { body(ended) }
    }

    /// Ends the stream: the call is cancelled.
    func cancel() {
        end(.cancelled)
    }

    /// Ends the stream: the peer hung up (closed, or shut down its sending side), or the
    /// connection closed.
    func hangUp() {
        end(.gone)
    }

    /// Hands `reply`, framed as an intermediate reply, to the connection's loop (in process: to
    /// the caller); false once the stream has ended.
    public func send(_ reply: VarlinkReply) -> Bool {
        guard case .connection(_, let batch) = target else { return sendInProcess(reply) }
        enum Handing { case ended, queued, tooMany }
        let handing = state.withLock { state -> Handing in
            guard state.ending == nil else { return .ended }
            // More than `limit` replies waiting for the loop to write them is falling behind
            // too: replies may come faster than the loop writes them, and nothing else bounds
            // how many wait.
            guard state.queued < limit else { return .tooMany }
            state.queued += 1
            return .queued
        }
        switch handing {
        case .ended: return false
        case .tooMany:
            end(.fellBehind)
            return false
        case .queued:
            batch.add(reply.frame(continues: true), to: self)
            return true
        }
    }

    /// Hands `reply` to the in-process caller; a caller that is not reading counts as a peer
    /// whose socket is full, and one that has gone (its `send` threw) ends the stream.
    private func sendInProcess(_ reply: VarlinkReply) -> Bool {
        guard case .inProcess(let replies) = target, ending == nil else { return false }
        do {
            try replies.send(reply)
        } catch {
            end(.gone)
            return false
        }
        let reading = replies.isReading()
        let fellBehind = state.withLock { state in
            state.behind = reading ? 0 : state.behind + 1
            return state.behind > limit
        }
        if fellBehind { end(.fellBehind) }
        return true
    }

    /// Waits until the stream has ended, and says why; cancelling the wait cancels the stream:
    /// how an in-process caller follows a call left to its stream.
    public func ended() async -> Ending {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                whenEnded { continuation.resume(returning: $0) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Writes one frame, on the connection's loop (`ReplyBatch`), flushing after the last one
    /// queued (or `flushAtLeastEvery`): one pass through the pipeline for a connection with
    /// one reply in the batch.
    func writeOnLoop(_ frame: ByteBuffer) {
        // Only a connection's batch calls this.
        guard let channel else { return }
        let writable = channel.isWritable
        let (write, last, fellBehind) = state.withLock { state -> (Bool, Bool, Bool) in
            state.queued -= 1
            guard state.ending == nil else { return (false, state.queued == 0, false) }
            state.behind = writable ? 0 : state.behind + 1
            let fellBehind = state.behind > limit
            state.unflushed += 1
            let last = state.queued == 0 || fellBehind || state.unflushed >= Self.flushAtLeastEvery
            if last { state.unflushed = 0 }
            return (!fellBehind, last, fellBehind)
        }
        if fellBehind { end(.fellBehind) }
        guard let entry else {
            // Handed to the loop before the hand-off: the pipeline from its tail.
            switch (write, last) {
            case (true, true): channel.writeAndFlush(frame, promise: nil)
            case (true, false): channel.write(frame, promise: nil)
            case (false, true): channel.flush()
            case (false, false): break
            }
            return
        }
        switch (write, last) {
        case (true, true): entry.writeAndFlush(NIOAny(frame), promise: nil)
        case (true, false): entry.write(NIOAny(frame), promise: nil)
        // What was written before the stream ended still goes out, flushed once.
        case (false, true): entry.flush()
        case (false, false): break
        }
    }

    /// Replies are written from `context` on: the connection's handler took the stream over.
    /// On the channel's loop. A stream handed back on another connection than its own (a
    /// handler's bug) keeps writing to its own, from the pipeline's tail.
    func enterPipeline(at context: ChannelHandlerContext) {
        context.eventLoop.assertInEventLoop()
        guard let channel, context.channel === channel else { return }
        entry = context
    }

    /// The handler let go of the stream (it ended, or the channel closed): replies go in at
    /// the pipeline's tail again, and the stream no longer keeps the handler alive. On the
    /// channel's loop.
    func leavePipeline() {
        channel?.eventLoop.assertInEventLoop()
        entry = nil
    }

    /// Ends the stream as if the peer fell behind: for a handler that holds replies back and
    /// has held too many.
    public func fallBehind() {
        end(.fellBehind)
    }

    private func end(_ ending: Ending) {
        let callbacks = state.withLock { state -> [@Sendable (Ending) -> Void]? in
            guard state.ending == nil else { return nil }
            state.ending = ending
            defer {
                state.whenEnded = nil
                state.moreWhenEnded = []
            }
            return (state.whenEnded.map { [$0] } ?? []) + state.moreWhenEnded
        }
        guard let callbacks else { return }
        for callback in callbacks { callback(ending) }
        // Always a turn later, never from inside the handler's own event.
        guard let channel else { return }
        let ended = Ended(stream: self, ending: ending)
        channel.eventLoop.execute { channel.pipeline.fireUserInboundEventTriggered(ended) }
    }
}

/// An in-process caller of a streaming call: where its replies go, and whether it is reading
/// them (the in-process side of a socket with room).
struct InProcessReplies: Sendable {
    /// Takes one reply; throws when the caller has gone.
    let send: @Sendable (VarlinkReply) throws -> Void
    /// Whether the caller keeps up, asked after each reply.
    let isReading: @Sendable () -> Bool
}
