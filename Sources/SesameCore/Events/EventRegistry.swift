import Synchronization

/// The multicast registry: every published event reaches every subscriber whose filter
/// accepts it, in sequence order, encoded once for all of them. Subscribers leave by cancelling
/// or dropping their `Subscription`; one that falls behind is cut off without slowing the rest.
public final class EventRegistry<Payload: Sendable>: Sendable {
    /// What a new subscriber must be told before live events, given the `since` it asked for.
    public enum Backlog: Sendable {
        /// Nothing was missed (no `since`, or it is current).
        case upToDate
        /// The events after `since`, from the history, already filtered and encoded.
        case replay([Payload])
        /// `since` is older than the history (or from before a restart): the subscriber needs
        /// the full current state instead.
        case resync
    }

    /// A subscriber read through its queue.
    private struct Queued: Sendable {
        var filter: EventFilter
        var queue: SubscriberQueue<Payload>
    }

    /// A subscriber that takes its events directly (`Subscription.attach`). A class, so that a
    /// publish hands events out over a list of references, with no copying of the entries and
    /// no generic work per subscriber beyond the filter and the sink.
    private final class Attached: Sendable {
        let id: UInt64
        let filter: EventFilter
        let sink: any EventSink<Payload>

        init(id: UInt64, filter: EventFilter, sink: any EventSink<Payload>) {
            self.id = id
            self.filter = filter
            self.sink = sink
        }
    }

    private struct State {
        var queued: [UInt64: Queued] = [:]
        /// The attached subscribers, in no order, and where each one is among them: a publish
        /// takes the list as it is (copy-on-write) and goes through it without the lock.
        var attached: ContiguousArray<Attached> = []
        var attachedIndex: [UInt64: Int] = [:]
        var nextID: UInt64 = 0
        var history: [(event: AuthEvent, payload: Payload)] = []
        var historyHead = 0

        mutating func remove(_ id: UInt64) {
            if queued.removeValue(forKey: id) != nil { return }
            guard let index = attachedIndex.removeValue(forKey: id) else { return }
            let last = attached.removeLast()
            guard index < attached.count else { return }
            attached[index] = last
            attachedIndex[last.id] = index
        }

        mutating func remember(_ event: AuthEvent, _ payload: Payload, limit: Int) {
            guard limit > 0 else { return }
            history.append((event, payload))
            if history.count - historyHead > limit { historyHead += 1 }
            if historyHead > 1024 && historyHead * 2 > history.count {
                history.removeFirst(historyHead)
                historyHead = 0
            }
        }

        /// Queues `payload` for every queued subscriber `event` matches; those whose queue is
        /// full or closed are removed. Returns how many were cut off for being full.
        mutating func queue(_ event: AuthEvent, _ payload: Payload) -> Int {
            var lagged = 0
            var gone: [UInt64] = []
            for (id, entry) in queued where entry.filter.matches(event) {
                switch entry.queue.push(payload) {
                case .queued: continue
                case .lagged: lagged += 1
                case .closed: break
                }
                gone.append(id)
            }
            for id in gone { queued[id] = nil }
            return lagged
        }
    }

    private let state = Mutex(State())
    /// Held while events are handed to sinks, outside `state`: a sink may do a little work
    /// (a group lookup for an access check), and the order of events must hold for every sink.
    private let delivering = Mutex(())
    private let encode: @Sendable (AuthEvent) -> Payload

    /// How many undelivered events one subscriber may have before it is cut off.
    public let queueLimit: Int
    /// How many recent events are kept for subscribers that resume with `since`.
    public let historyLimit: Int
    /// The sequence number history starts after when it is empty: events up to it happened
    /// before this process and cannot be replayed.
    public let firstReplayableAfter: UInt64

    /// Creates a registry that encodes each event once with `encode`.
    public init(
        queueLimit: Int,
        historyLimit: Int,
        lastSequenceBeforeStart: UInt64,
        encode: @escaping @Sendable (AuthEvent) -> Payload
    ) {
        precondition(queueLimit > 0 && historyLimit >= 0, "limits must be positive")
        self.queueLimit = queueLimit
        self.historyLimit = historyLimit
        self.firstReplayableAfter = lastSequenceBeforeStart
        self.encode = encode
    }

    /// How many subscribers are registered.
    public var subscriberCount: Int {
        state.withLock { $0.queued.count + $0.attached.count }
    }

    /// Sends `event` to every matching subscriber and keeps it for replay. Never waits: a
    /// subscriber whose queue is full is removed, and its next read reports `SubscriberLagged`;
    /// a sink takes the event at once. Returns how many queued subscribers were cut off.
    @discardableResult
    public func publish(_ event: AuthEvent) -> Int {
        let payload = encode(event)
        return delivering.withLock { _ in
            let (lagged, attached) = state.withLock { state in
                state.remember(event, payload, limit: historyLimit)
                return (state.queue(event, payload), state.attached)
            }
            var gone: [UInt64] = []
            for index in attached.indices {
                let subscriber = attached[index]
                if subscriber.filter.matches(event), !subscriber.sink.deliver(payload) {
                    gone.append(subscriber.id)
                }
            }
            if !gone.isEmpty {
                state.withLock { state in
                    for id in gone { state.remove(id) }
                }
            }
            return lagged
        }
    }

    /// Registers a subscriber. Registration and the backlog are taken together, so no event falls
    /// between what `since` replays and what arrives live. `current` is the last sequence issued.
    public func subscribe(filter: EventFilter, since: UInt64?, current: UInt64) -> (Subscription<Payload>, Backlog) {
        let queue = SubscriberQueue<Payload>(limit: queueLimit)
        return state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.queued[id] = Queued(filter: filter, queue: queue)
            let subscription = Subscription(queue: queue, registry: self, id: id)
            guard let since, since != current else { return (subscription, .upToDate) }
            // A `since` ahead of us comes from another history (say, a store that was reset).
            guard since < current else { return (subscription, .resync) }
            let retained = state.history[state.historyHead...]
            let oldestAvailable = retained.first?.event.sequence ?? (current + 1)
            guard since >= firstReplayableAfter, since + 1 >= oldestAvailable else {
                return (subscription, .resync)
            }
            let missed = retained.filter { $0.event.sequence > since && filter.matches($0.event) }.map(\.payload)
            return (subscription, .replay(missed))
        }
    }

    fileprivate func remove(_ id: UInt64) {
        state.withLock { $0.remove(id) }
    }

    /// Sends the subscriber's events to `sink` from now on, those still queued first, in order.
    /// False when the subscriber was cut off (its queue full) or is gone.
    fileprivate func attach(_ sink: any EventSink<Payload>, to id: UInt64) -> Bool {
        delivering.withLock { _ in
            let queued = state.withLock { state -> [Payload]? in
                guard let entry = state.queued[id], let queued = entry.queue.takeAll() else { return nil }
                state.queued[id] = nil
                state.attachedIndex[id] = state.attached.count
                state.attached.append(Attached(id: id, filter: entry.filter, sink: sink))
                return queued
            }
            guard let queued else { return false }
            for payload in queued where !sink.deliver(payload) {
                remove(id)
                return true
            }
            return true
        }
    }
}

/// Takes a subscriber's events as they are published, instead of its queue: for a subscriber
/// that can pass each one on without waiting (to its connection's event loop), so no task has
/// to wake for every event. Events arrive in order, one at a time. A class, so that the
/// registry keeps a 16-byte class existential for every subscriber, not a 40-byte one.
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
    /// is then no longer read. Throws `SubscriberLagged` if the subscriber was already cut off,
    /// and returns false if it is gone (cancelled) or already has a sink (a subscription is
    /// attached once).
    public func attach(_ sink: any EventSink<Payload>) throws -> Bool {
        guard registry?.attach(sink, to: id) ?? false else {
            if queue.isLagged { throw SubscriberLagged(queueLimit: queue.limit) }
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
    /// throws `SubscriberLagged` when cut off.
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

        public mutating func next() async throws -> Payload? {
            try await subscription.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(subscription: self)
    }
}
