import Foundation
import Logging
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameVarlinkTesting
import Testing

@testable import SesameDaemon

/// io.sesame.Events.Subscribe called in-process: the stream, and the errors it documents.
@Suite struct EventsHandlerTests {
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
        let task = Task { _ = try await fixture.events.handle(call, context: context) }
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
