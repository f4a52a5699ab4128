import SesameCore
import SesameProtocol
import SesameVarlinkTesting
import Testing

@testable import SesameDaemon
@testable import SesameVarlink

/// The Events handler answering as another uid: every peer of a socket in this process has
/// the test's own uid (root, as the suite runs), to whom the access checks do not apply.
private struct EventsAsAnotherUser: VarlinkInterface {
    let events: EventsInterface
    let peer: PeerCredentials
    var name: String { events.name }
    var interfaceDescription: String { events.interfaceDescription }

    var methods: VarlinkMethods {
        events.methods.wrappingHandlers { [peer] context, handle in try await handle(context.answered(as: peer)) }
    }
}

/// A live subscription over a real connection, whose events go out through the connection's
/// reply stream (not the in-process path `EventsHandlerTests` take): a reload that changes the
/// subscriber's group memberships applies to it from its next event on.
@Suite struct StreamedEventsTests {
    private static let subscriber = PeerCredentials(pid: 1, uid: 1001, gid: 1001)
    private static let watchers: UInt32 = 2000

    @Test(.timeLimit(.minutes(1))) func aReloadedMembershipAppliesToALiveSubscription() async throws {
        let members = Members([])
        let policy = AccessPolicy(grants: [
            Grant(principal: .group(Self.watchers), target: .provider("scripted"), rights: .observe, owner: 1000)
        ])
        let fixture = HandlerFixture(policy: policy) { members.contains($0) ? [Self.watchers] : [] }
        let test = try await TestServer.start([EventsAsAnotherUser(events: fixture.events, peer: Self.subscriber)])
        let client = try await VarlinkClient.connect(unixSocketPath: test.path)
        var replies = try await client.stream(EventsContract.subscribe.qualifiedName).makeAsyncIterator()
        try #require(await replies.next()?.parameters["ready"] != nil)

        /// The account of the next event that reaches the subscriber.
        func nextAccount() async throws -> String? {
            try await replies.next()?.parameters["event"]?["account"]?.stringValue
        }
        /// Applies a reload, as SIGHUP does, after the subscriber's memberships changed.
        func reload(memberOfWatchers: Bool) {
            if memberOfWatchers { members.add(Self.subscriber.uid) } else { members.remove(Self.subscriber.uid) }
            fixture.trust.update(policy: policy, limits: UserLimits())
        }

        // Another user's account stays hidden: the next event is the subscriber's own.
        _ = try await fixture.imported(subject: "other-1", as: 1000)
        var own = try await fixture.imported(subject: "own-1", as: 1001)
        try #require(await nextAccount() == own.id)

        // Added to the group: the other user's next event is looked at with the groups looked up
        // again, and reaches the subscriber, though none of its own came first.
        reload(memberOfWatchers: true)
        let other = try await fixture.imported(subject: "other-2", as: 1000)
        own = try await fixture.imported(subject: "own-2", as: 1001)
        try #require(await nextAccount() == other.id)
        try #require(await nextAccount() == own.id)

        // Taken out of the group: the next event passed the registry's check with the groups
        // as they were, and is dropped when they have been looked up again, before it is sent.
        reload(memberOfWatchers: false)
        _ = try await fixture.imported(subject: "other-3", as: 1000)
        own = try await fixture.imported(subject: "own-3", as: 1001)
        try #require(await nextAccount() == own.id)

        test.server.shutdown()
        try await test.stopped()
        await client.close()
    }
}
