import Foundation
import Logging
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameVarlinkTesting
import SesameWire
import Synchronization
import Testing

@testable import SesameDaemon

/// io.sesame.Events.Subscribe called in-process: the stream, and the errors it documents.
@Suite(.timeLimit(.minutes(1))) struct EventsHandlerTests {
    /// Subscribes as `uid`, handing each streamed reply to the returned stream; cancel the task to end it.
    private func subscribe(_ fixture: HandlerFixture, uid: UInt32 = 1000, kinds: [AuthEvent.Kind]? = nil) throws
        -> (AsyncStream<SubscribeReply>, Task<Void, any Error>)
    {
        let (replies, continuation) = AsyncStream<SubscribeReply>.makeStream()
        let context = VarlinkCallContext(
            peer: PeerCredentials(pid: 1, uid: uid, gid: uid),
            logger: Logger(label: "test"),
            streaming: true
        ) { reply in continuation.yield(try reply.decode(SubscribeReply.self)) }
        let parameters = try JSONValue(encoding: SubscribeParameters(accounts: nil, kinds: kinds, since: nil))
        let call = VarlinkCall(
            method: "io.sesame.Events.Subscribe",
            parameters: parameters.objectValue ?? [:],
            more: true
        )
        let task = Task { _ = try await fixture.events.methods.answer(call, context: context) }
        return (replies, task)
    }

    @Test func aSubscriberGetsReadyThenTheEventsOfItsOwnAccounts() async throws {
        let fixture = HandlerFixture()
        let (replies, task) = try subscribe(fixture)
        defer { task.cancel() }
        var iterator = replies.makeAsyncIterator()
        #expect(await iterator.next()?.ready != nil)
        _ = try await fixture.imported(subject: "stranger", as: 1001)
        let account = try await fixture.imported()
        let event = try #require(await iterator.next()?.event)
        #expect(event.account == account.id && event.kind == .loggedIn)
    }

    @Test func subscribeWithoutMoreIsExpectedMoreAndAnUnknownKindIsInvalidParameter() async throws {
        let fixture = HandlerFixture()
        let plain = try await InProcessCall(uid: 1000).call(
            fixture.events,
            "Subscribe",
            SubscribeParameters(accounts: nil, kinds: nil, since: nil)
        )
        #expect(plain.errorName == VarlinkError.expectedMore.name)
        let badKind = try await InProcessCall(uid: 1000).call(
            fixture.events,
            "Subscribe",
            ["kinds": ["nosuch"]],
            more: true
        )
        #expect(badKind.result.failure == VarlinkError.invalidParameter("kinds"))
    }

    @Test func aSubscriberThatFallsMoreThanTheQueueBehindIsCutOffAsLagged() async throws {
        let fixture = HandlerFixture(queueLimit: 2)
        // The subscriber takes `ready`, then reads nothing more: each event it is handed finds
        // it not reading, as a socket with no room.
        let events = Mutex(0)
        let context = VarlinkCallContext(
            peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000),
            logger: Logger(label: "test"),
            streaming: true,
            isReading: { false }
        ) { reply in
            if try reply.decode(SubscribeReply.self).event != nil { events.withLock { $0 += 1 } }
        }
        let call = VarlinkCall(method: "io.sesame.Events.Subscribe", parameters: [:], more: true)
        let subscription = Task { try await fixture.events.methods.answer(call, context: context) }
        await fixture.untilSubscribed()
        for subject in ["a", "b", "c", "d", "e"] { _ = try await fixture.imported(subject: subject) }
        // Were every event to get through, nothing would end the subscription: this ends it
        // then, so that the test fails instead of waiting for ever.
        await fixture.engine.registry.waitForDeliveries()
        if events.withLock({ $0 }) == 5 { subscription.cancel() }
        await #expect(throws: VarlinkError(.lagged(queueLimit: 2))) { try await subscription.value }
        #expect(events.withLock { $0 } == 3, "cut off at the third event it did not read")
        #expect(fixture.engine.registry.subscriberCount == 0)
    }

    @Test func aMembershipAReloadFindsAddedOrGoneCountsForALiveSubscriptionFromThen() async throws {
        let admins = Members([])
        let policy = AccessPolicy(adminGroup: 500)
        let fixture = HandlerFixture(policy: policy, groups: { admins.contains($0) ? [500] : [] })
        let (replies, task) = try subscribe(fixture, uid: 1001)
        defer { task.cancel() }
        var iterator = replies.makeAsyncIterator()
        try #require(await iterator.next()?.ready != nil)

        admins.add(1001)  // gpasswd -a, then SIGHUP
        fixture.trust.update(policy: policy, limits: UserLimits())
        // No event of the subscriber's own comes first to have its groups looked up again.
        let seen = try await fixture.imported(subject: "seen-as-admin")
        var own = try await fixture.imported(subject: "own-1", as: 1001)
        try #require(await iterator.next()?.event?.account == seen.id, "the other user's event was not sent")
        #expect(await iterator.next()?.event?.account == own.id)

        admins.remove(1001)  // gpasswd -d, then SIGHUP
        fixture.trust.update(policy: policy, limits: UserLimits())
        _ = try await fixture.imported(subject: "no-longer-seen")
        own = try await fixture.imported(subject: "own-2", as: 1001)
        #expect(await iterator.next()?.event?.account == own.id, "the other user's event was sent")
    }

    @Test func subscriptionsBeyondTheUsersAllowanceAreTooManySubscriptions() async throws {
        let fixture = HandlerFixture(limits: UserLimits(subscriptions: 1))
        let (replies, task) = try subscribe(fixture)
        defer { task.cancel() }
        var iterator = replies.makeAsyncIterator()
        #expect(await iterator.next()?.ready != nil)
        let second = try await InProcessCall(uid: 1000).call(
            fixture.events,
            "Subscribe",
            SubscribeParameters(accounts: nil, kinds: nil, since: nil),
            more: true
        )
        #expect(second.errorName == "io.sesame.Events.TooManySubscriptions")
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
