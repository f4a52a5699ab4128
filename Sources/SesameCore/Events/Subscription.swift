import Synchronization

/// Takes a subscriber's events directly, instead of its queue: for a subscriber that can pass
/// each one on without waiting (to its connection's event loop), so no task has to wake for
/// every event. Events arrive in order, one at a time, on the engine's own event loop, soon
/// after they are published. A delivery is planned when its event is published, so a sink may
/// still be handed a few events after it returned false or its subscription was cancelled, and
/// must refuse them itself. It must never wait, for the engine, a task or anything else: the
/// engine's next change waits for it, and a sink that hangs stops every change (and the
/// watchdog then restarts sesamed). A class, so that the registry keeps a 16-byte class existential for every
/// subscriber, not a 40-byte one.
public protocol EventSink<Payload>: AnyObject, Sendable {
    /// What an event is, as published.
    associatedtype Payload: Sendable
    /// Takes one event without waiting; false when the subscriber is gone (or was cut off),
    /// which unsubscribes it.
    func deliver(_ payload: Payload) -> Bool
}

/// A live subscription: read it as an async sequence of encoded events. Cancelling it, dropping
/// it, or cancelling the task that reads it unsubscribes; there is no remove call to forget.
public final class Subscription<Payload: Sendable>: Sendable, AsyncSequence {
    /// An encoded event.
    public typealias Element = Payload

    private let queue: SubscriberQueue<Payload>
    /// Where it is registered, as `id`: held weakly, and directly rather than through
    /// closures, which every idle subscriber would keep.
    // Set once in `init` and never written again, so reading it from any thread is safe; a
    // `weak let` says so itself but needs Swift 6.2, and Sesame builds with 6.1.
    nonisolated(unsafe) private weak var registry: EventRegistry<Payload>?
    private let id: UInt64

    init(queue: SubscriberQueue<Payload>, registry: EventRegistry<Payload>, id: UInt64) {
        self.queue = queue
        self.registry = registry
        self.id = id
    }

    /// Hands every event from now on to `sink`, the ones not yet read first; the subscription
    /// is then no longer read. Throws `SubscriberLaggedError` if the subscriber was already cut off,
    /// and returns false if it is gone (cancelled) or already has a sink (a subscription is
    /// attached once).
    public func attach(_ sink: any EventSink<Payload>) throws -> Bool {
        guard registry?.attach(sink, to: id) ?? false else {
            if queue.isLagged { throw SubscriberLaggedError(queueLimit: queue.limit) }
            return false
        }
        return true
    }

    deinit {
        cancel()
    }

    /// Unsubscribes; a read in progress returns nil.
    public func cancel() {
        registry?.remove(id)
        queue.cancel()
    }

    /// The next event; nil when cancelled (cancelling the reading task cancels the subscription);
    /// throws `SubscriberLaggedError` when cut off.
    public func next() async throws -> Payload? {
        try await withTaskCancellationHandler {
            try await queue.next()
        } onCancel: {
            cancel()
        }
    }

    /// Reads the subscription's events in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: Subscription<Payload>

        /// The subscription's next event, as `Subscription.next()`.
        public mutating func next() async throws -> Payload? {
            try await subscription.next()
        }
    }

    /// An iterator over the subscription's events.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(subscription: self)
    }
}
