import NIOCore
import Synchronization

/// The multicast registry: every published event reaches every subscriber whose filter
/// accepts it, in sequence order, encoded once for all of them. Subscribers leave by cancelling
/// or dropping their `Subscription`; one that falls behind its queue is cut off, and the others
/// go on.
/// Subscribers that take events directly (`Subscription.attach`) are handed them on the
/// registry's event loop after the publisher has gone on, so the change that caused an event is
/// answered without waiting for ten thousand subscribers to be handed it.
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
    /// Where attached sinks are handed their events: one delivery after another, in the order
    /// they were handed over (under `state`, so in the order of publishing and attaching). The
    /// engine runs on this loop too, so a change waits for the deliveries queued before it: what
    /// waits to be handed out is bounded by the engine's calls already waiting and the events
    /// one of them makes (one pass over the accounts' deadlines), not by a constant.
    private let deliveries: any EventLoop
    private let encode: @Sendable (AuthEvent) -> Payload

    /// How many undelivered events one subscriber may have before it is cut off.
    public let queueLimit: Int
    /// How many recent events are kept for subscribers that resume with `since`.
    public let historyLimit: Int
    /// The sequence number history starts after: events up to it cannot be replayed (they
    /// happened before this process and were not kept).
    public let firstReplayableAfter: UInt64

    /// Creates a registry that encodes each event once with `encode`, and replays `kept` (the
    /// events kept from before this process, oldest first, consecutive and ending at
    /// `lastSequenceBeforeStart`) to subscribers that resume from among them.
    public init(
        queueLimit: Int,
        historyLimit: Int,
        lastSequenceBeforeStart: UInt64,
        kept: [AuthEvent] = [],
        deliveringOn deliveries: any EventLoop,
        encode: @escaping @Sendable (AuthEvent) -> Payload
    ) {
        precondition(queueLimit > 0 && historyLimit >= 0, "limits must be positive")
        self.queueLimit = queueLimit
        self.historyLimit = historyLimit
        let kept = kept.suffix(historyLimit)
        self.firstReplayableAfter = kept.first.map { $0.sequence - 1 } ?? lastSequenceBeforeStart
        self.deliveries = deliveries
        self.encode = encode
        state.withLock { state in
            for event in kept { state.remember(event, encode(event), limit: historyLimit) }
        }
    }

    /// How many subscribers are registered.
    public var subscriberCount: Int {
        state.withLock { $0.queued.count + $0.attached.count }
    }

    /// Sends `event` to every matching subscriber and keeps it for replay. A subscriber whose
    /// queue is full is removed, and its next read reports `SubscriberLaggedError`; the attached ones
    /// (as they are now) are handed it soon after, in order. Never waits. Returns how many
    /// queued subscribers were cut off.
    @discardableResult
    public func publish(_ event: AuthEvent) -> Int {
        let payload = encode(event)
        return state.withLock { state in
            state.remember(event, payload, limit: historyLimit)
            let attached = state.attached
            if !attached.isEmpty {
                handOver { self.deliver(event, payload, to: attached) }
            }
            return state.queue(event, payload)
        }
    }

    /// Returns once every event published so far has been handed to the attached sinks.
    public func waitForDeliveries() async {
        // The loop runs what it is given in order: this runs after every delivery before it.
        try? await deliveries.submit {}.get()
    }

    /// Queues one delivery behind those handed over before it; called under `state`, which
    /// orders deliveries as the changes that made them.
    private func handOver(_ delivery: @escaping @Sendable () -> Void) {
        deliveries.execute(delivery)
    }

    /// Hands one event to the sinks of `attached` its filter matches; those that are gone leave.
    private func deliver(_ event: AuthEvent, _ payload: Payload, to attached: ContiguousArray<Attached>) {
        var gone: [UInt64] = []
        for index in attached.indices {
            let subscriber = attached[index]
            if subscriber.filter.matches(event), !subscriber.sink.deliver(payload) {
                gone.append(subscriber.id)
            }
        }
        guard !gone.isEmpty else { return }
        state.withLock { state in
            for id in gone { state.remove(id) }
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

    /// Unregisters subscriber `id`, queued or attached; nothing if it is gone already.
    func remove(_ id: UInt64) {
        state.withLock { $0.remove(id) }
    }

    /// Sends the subscriber's events to `sink` from now on, those still queued first, in order.
    /// False when the subscriber was cut off (its queue full) or is gone.
    func attach(_ sink: any EventSink<Payload>, to id: UInt64) -> Bool {
        state.withLock { state in
            guard let entry = state.queued[id], let queued = entry.queue.takeAll() else { return false }
            state.queued[id] = nil
            state.attachedIndex[id] = state.attached.count
            state.attached.append(Attached(id: id, filter: entry.filter, sink: sink))
            // Handed over as the next delivery, so before any event published from now on.
            if !queued.isEmpty {
                handOver {
                    for payload in queued where !sink.deliver(payload) {
                        self.remove(id)
                        return
                    }
                }
            }
            return true
        }
    }
}
