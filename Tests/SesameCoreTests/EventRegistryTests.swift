import Foundation
import NIOCore
import SesameCore
import SesameCoreTesting
import Synchronization
import Testing

private func event(_ sequence: UInt64, account: String = "a", kind: AuthEvent.Kind = .loggedIn) -> AuthEvent {
    AuthEvent(
        sequence: sequence,
        time: Date(timeIntervalSince1970: 0),
        kind: kind,
        account: Account(id: account, provider: "p", ownerUID: 1, subject: "s", state: .active, createdAt: Date())
    )
}

private func registry(
    queueLimit: Int = 64,
    historyLimit: Int = 16,
    before: UInt64 = 0,
    loop: any EventLoop = testEngineLoop
) -> EventRegistry<UInt64> {
    EventRegistry(
        queueLimit: queueLimit,
        historyLimit: historyLimit,
        lastSequenceBeforeStart: before,
        deliveringOn: loop
    ) { $0.sequence }
}

@Suite struct EventRegistryTests {
    @Test func tenThousandSubscribersEachGetEveryEventInOrder() async throws {
        let registry = registry(queueLimit: 64)
        let subscriptions = (0..<10_000).map { _ in registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
        }
        #expect(registry.subscriberCount == 10_000)
        for sequence in 1...50 as ClosedRange<UInt64> {
            #expect(registry.publish(event(sequence)) == 0)
        }
        for subscription in subscriptions {
            var received: [UInt64] = []
            for _ in 0..<50 { received.append(try await subscription.next() ?? 0) }
            #expect(received == Array(1...50))
        }
    }

    @Test func aSubscriberThatNeverReadsIsCutOffAndNobodyElseWaits() async throws {
        let registry = registry(queueLimit: 8)
        let stalled = registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
        let reader = registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
        var received: [UInt64] = []
        for sequence in 1...100 as ClosedRange<UInt64> {
            let cutOff = registry.publish(event(sequence))
            #expect(cutOff == (sequence == 9 ? 1 : 0))
            received.append(try await reader.next() ?? 0)
        }
        #expect(received == Array(1...100))
        #expect(registry.subscriberCount == 1)
        await #expect(throws: SubscriberLaggedError(queueLimit: 8)) { try await stalled.next() }
    }

    @Test func filtersByAccountAndKind() async throws {
        let registry = registry()
        let filtered = registry.subscribe(
            filter: EventFilter(accounts: ["b"], kinds: [.expired]),
            since: nil,
            current: 0
        ).0
        registry.publish(event(1, account: "a", kind: .expired))
        registry.publish(event(2, account: "b", kind: .loggedIn))
        registry.publish(event(3, account: "b", kind: .expired))
        #expect(try await filtered.next() == 3)
    }

    @Test func droppingOrCancellingTheHandleUnsubscribes() async throws {
        let registry = registry()
        do {
            let dropped = registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
            _ = dropped
        }
        #expect(registry.subscriberCount == 0)
        let cancelled = registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
        cancelled.cancel()
        #expect(registry.subscriberCount == 0)
        #expect(try await cancelled.next() == nil)
    }

    @Test func cancellingTheReadingTaskUnsubscribes() async throws {
        let registry = registry()
        let subscription = registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
        let reader = Task { try await subscription.next() }
        while registry.subscriberCount == 1 && !reader.isCancelled {
            reader.cancel()
            await Task.yield()
        }
        #expect(try await reader.value == nil)
        #expect(registry.subscriberCount == 0)
    }

    @Test func replaysWhatWasMissedThenGoesLive() async throws {
        let registry = registry(historyLimit: 16)
        for sequence in 1...10 as ClosedRange<UInt64> { registry.publish(event(sequence)) }
        let (subscription, backlog) = registry.subscribe(filter: EventFilter(), since: 7, current: 10)
        guard case .replay(let missed) = backlog else {
            Issue.record("expected a replay, got \(backlog)")
            return
        }
        #expect(missed == [8, 9, 10])
        registry.publish(event(11))
        #expect(try await subscription.next() == 11)
    }

    @Test func asksForAResyncWhenHistoryNoLongerReachesBack() {
        let registry = registry(historyLimit: 4)
        for sequence in 1...10 as ClosedRange<UInt64> { registry.publish(event(sequence)) }
        if case .resync = registry.subscribe(filter: EventFilter(), since: 5, current: 10).1 {
        } else {
            Issue.record("since=5 with history 7...10 must resync")
        }
        if case .replay(let missed) = registry.subscribe(filter: EventFilter(), since: 6, current: 10).1 {
            #expect(missed == [7, 8, 9, 10])
        } else {
            Issue.record("since=6 with history 7...10 can replay")
        }
        if case .upToDate = registry.subscribe(filter: EventFilter(), since: 10, current: 10).1 {
        } else {
            Issue.record("since=current is up to date")
        }
        if case .resync = registry.subscribe(filter: EventFilter(), since: 11, current: 10).1 {
        } else {
            Issue.record("a since from the future must resync")
        }
    }

    @Test func eventsFromBeforeARestartCannotBeReplayed() {
        let registry = registry(historyLimit: 16, before: 100)
        registry.publish(event(101))
        if case .resync = registry.subscribe(filter: EventFilter(), since: 99, current: 101).1 {
        } else {
            Issue.record("since before the restart must resync")
        }
        if case .replay(let missed) = registry.subscribe(filter: EventFilter(), since: 100, current: 101).1 {
            #expect(missed == [101])
        } else {
            Issue.record("since at the restart can replay")
        }
    }
}

/// A sink that keeps what it is given, and says it is gone after `capacity` events.
private final class CollectingSink: EventSink, Sendable {
    let capacity: Int
    let received = Mutex<[UInt64]>([])

    init(capacity: Int = .max) {
        self.capacity = capacity
    }

    func deliver(_ payload: UInt64) -> Bool {
        received.withLock { received in
            guard received.count < capacity else { return false }
            received.append(payload)
            return true
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct EventSinkTests {
    /// Events queued before the sink is attached come first, then the live ones, each once,
    /// in order; the subscription's filter still applies.
    @Test func anAttachedSinkGetsTheQueuedEventsThenTheLiveOnesInOrder() async throws {
        let registry = registry(queueLimit: 64)
        let subscription = registry.subscribe(filter: EventFilter(accounts: ["a"]), since: nil, current: 0).0
        registry.publish(event(1))
        registry.publish(event(2, account: "b"))
        registry.publish(event(3))
        let sink = CollectingSink()
        #expect(try subscription.attach(sink))
        registry.publish(event(4))
        registry.publish(event(5, account: "b"))
        registry.publish(event(6))
        await registry.waitForDeliveries()
        #expect(sink.received.withLock { $0 } == [1, 3, 4, 6])
    }

    /// Attached subscribers leave in any order (the first, one whose place another took, the
    /// last), and the event after that reaches exactly those still there.
    @Test func attachedSubscribersLeaveInAnyOrder() async throws {
        let registry = registry(queueLimit: 64)
        let subscriptions = (0..<6).map { _ in registry.subscribe(filter: EventFilter(), since: nil, current: 0).0 }
        let sinks = subscriptions.map { _ in CollectingSink() }
        for (subscription, sink) in zip(subscriptions, sinks) { #expect(try subscription.attach(sink)) }
        for leaving in [1, 5, 0, 3] {
            subscriptions[leaving].cancel()
            registry.publish(event(UInt64(leaving) + 1))
        }
        #expect(registry.subscriberCount == 2)
        registry.publish(event(10))
        await registry.waitForDeliveries()
        let received = sinks.map { sink in sink.received.withLock { $0 } }
        #expect(received == [[2, 6], [], [2, 6, 1, 4, 10], [2, 6, 1], [2, 6, 1, 4, 10], [2]])
    }

    /// A sink that says it is gone is unsubscribed; one attached after its queue overflowed
    /// learns that it was cut off.
    @Test func aGoneSinkIsUnsubscribedAndALaggedSubscriberCannotAttach() async throws {
        let registry = registry(queueLimit: 4)
        let subscription = registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
        let sink = CollectingSink(capacity: 2)
        #expect(try subscription.attach(sink))
        for sequence in 1...3 as ClosedRange<UInt64> { registry.publish(event(sequence)) }
        await registry.waitForDeliveries()
        #expect(registry.subscriberCount == 0)
        #expect(sink.received.withLock { $0 } == [1, 2])

        let lagging = registry.subscribe(filter: EventFilter(), since: nil, current: 3).0
        for sequence in 4...9 as ClosedRange<UInt64> { registry.publish(event(sequence)) }
        #expect(throws: SubscriberLaggedError(queueLimit: 4)) { try lagging.attach(CollectingSink()) }
        let cancelled = registry.subscribe(filter: EventFilter(), since: nil, current: 9).0
        cancelled.cancel()
        #expect(try cancelled.attach(CollectingSink()) == false)
    }

    /// The publisher goes on before a sink is handed the event: a change is answered without
    /// waiting for every subscriber (a sink here that waits until the publisher is done).
    @Test func publishingDoesNotWaitForTheSinks() async throws {
        try await withPrivateEngineLoop { (loop: any EventLoop) async throws in
            let registry = registry(queueLimit: 64, loop: loop)
            let subscription = registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
            let sink = WaitingSink<UInt64>()
            #expect(try subscription.attach(sink))
            registry.publish(event(1))
            sink.publisherIsDone.signal()
            await registry.waitForDeliveries()
            #expect(sink.handedOverAfterThePublisher.withLock { $0 } == [true])
            subscription.cancel()
        }
    }
}

extension EventSinkTests {
    /// Deliveries run on the engine's loop, each after the change that made it and before the
    /// next: a change waits while the events of those before it are handed out, so changes
    /// cannot pile events up faster than subscribers are handed them.
    @Test func aChangeWaitsForTheDeliveriesOfTheChangesBeforeIt() async throws {
        try await withPrivateEngineLoop { (loop: any EventLoop) async throws in
            let fixture = EngineFixture(loop: loop)
            let sink = WaitingSink<AuthEvent>()
            let subscription = await fixture.subscribe()
            #expect(try subscription.attach(sink))
            let first = try await fixture.importAccount()
            let renamed = Progress()
            let second = Task {
                let account = try await fixture.engine.rename(first.id, to: "work")
                renamed.count.add(1, ordering: .relaxed)
                return account
            }
            // An upper bound on what the engine got done, which more time (a loaded machine) only
            // makes surer to find: the first change's delivery waits for the signal below.
            try await Task.sleep(for: .milliseconds(200))
            #expect(renamed.count.load(ordering: .relaxed) == 0)
            sink.publisherIsDone.signal()
            #expect(try await second.value.name == "work")
            await fixture.engine.registry.waitForDeliveries()
            #expect(sink.handedOverAfterThePublisher.withLock { $0 } == [true])
            subscription.cancel()
        }
    }
}

/// How far a publisher on another thread got.
private final class Progress: Sendable {
    let count = Atomic<Int>(0)
}

/// A sink that, handed its first event, waits (up to ten seconds) until the publisher is done,
/// and notes for each event whether it was.
private final class WaitingSink<Payload: Sendable>: EventSink, Sendable {
    let publisherIsDone = DispatchSemaphore(value: 0)
    let handedOverAfterThePublisher = Mutex<[Bool]>([])

    func deliver(_ payload: Payload) -> Bool {
        let first = handedOverAfterThePublisher.withLock { $0.isEmpty }
        let waited = !first || publisherIsDone.wait(timeout: .now() + .seconds(10)) == .success
        handedOverAfterThePublisher.withLock { $0.append(waited) }
        return true
    }
}
