import Synchronization

/// A subscriber fell more than its queue behind and was cut off; it must resubscribe (with
/// `since`) to catch up.
public struct SubscriberLaggedError: Error, Sendable, Hashable {
    /// How many undelivered events the subscriber was allowed to have.
    public var queueLimit: Int

    /// Creates the error for a queue of `queueLimit` events.
    public init(queueLimit: Int) {
        self.queueLimit = queueLimit
    }
}

/// One subscriber's bounded queue: the publisher never waits for it, and a subscriber that
/// falls behind by more than `limit` events is cut off instead of holding everyone up.
final class SubscriberQueue<Payload: Sendable>: Sendable {
    private enum Terminal {
        case lagged
        case cancelled
    }

    private struct State {
        var buffer: [Payload] = []
        var head = 0
        var waiter: CheckedContinuation<Payload?, any Error>?
        var terminal: Terminal?

        var count: Int { buffer.count - head }

        mutating func popFirst() -> Payload? {
            guard head < buffer.count else { return nil }
            let element = buffer[head]
            head += 1
            if head > 64 && head * 2 > buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            return element
        }
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// What became of a pushed payload.
    enum PushResult {
        case queued
        /// The queue was full: it is emptied and the subscriber's next read reports the lag.
        case lagged
        /// The subscriber is gone.
        case closed
    }

    /// Hands `payload` to the subscriber without ever waiting. (A full queue never has a reader
    /// waiting, so a lag wakes nobody.)
    func push(_ payload: Payload) -> PushResult {
        let (result, waiter) = state.withLock { state -> (PushResult, CheckedContinuation<Payload?, any Error>?) in
            guard state.terminal == nil else { return (.closed, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (.queued, waiter)
            }
            guard state.count < limit else {
                state.buffer.removeAll()
                state.head = 0
                state.terminal = .lagged
                return (.lagged, nil)
            }
            state.buffer.append(payload)
            return (.queued, nil)
        }
        waiter?.resume(returning: payload)
        return result
    }

    /// Empties the queue and returns what it held, for a subscriber that takes its events
    /// elsewhere from now on; nil once it was cut off or cancelled.
    func takeAll() -> [Payload]? {
        state.withLock { state in
            guard state.terminal == nil else { return nil }
            defer {
                state.buffer = []
                state.head = 0
            }
            return Array(state.buffer[state.head...])
        }
    }

    /// Whether the subscriber was cut off for falling behind.
    var isLagged: Bool {
        state.withLock { $0.terminal == .lagged }
    }

    /// Ends the queue: a waiting read returns nil, and so does every later one.
    func cancel() {
        let waiter = state.withLock { state -> CheckedContinuation<Payload?, any Error>? in
            if state.terminal == nil { state.terminal = .cancelled }
            state.buffer.removeAll()
            state.head = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next payload; nil once cancelled; throws `SubscriberLaggedError` once cut off.
    func next() async throws -> Payload? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Payload?, any Error>) in
            let immediate: Result<Payload?, any Error>? = state.withLock { state in
                if let element = state.popFirst() { return .success(element) }
                switch state.terminal {
                case .lagged: return .failure(SubscriberLaggedError(queueLimit: limit))
                case .cancelled: return .success(nil)
                case nil:
                    precondition(state.waiter == nil, "a subscription is read by one task at a time")
                    state.waiter = continuation
                    return nil
                }
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }
}
