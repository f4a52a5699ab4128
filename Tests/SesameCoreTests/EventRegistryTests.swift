import Foundation
import SesameCore
import Testing

private func event(_ sequence: UInt64, account: String = "a", kind: AuthEvent.Kind = .loggedIn) -> AuthEvent {
    AuthEvent(
        sequence: sequence,
        time: Date(timeIntervalSince1970: 0),
        kind: kind,
        account: Account(id: account, provider: "p", ownerUID: 1, subject: "s", state: .active, createdAt: Date())
    )
}

private func registry(queueLimit: Int = 64, historyLimit: Int = 16, before: UInt64 = 0) -> EventRegistry<UInt64> {
    EventRegistry(queueLimit: queueLimit, historyLimit: historyLimit, lastSequenceBeforeStart: before) { $0.sequence }
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
        await #expect(throws: SubscriberLagged(queueLimit: 8)) { try await stalled.next() }
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
