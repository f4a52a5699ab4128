import Logging
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Synchronization

/// `io.sesame.Events`: subscriptions to changes of login sessions.
struct EventsInterface: VarlinkInterface {
    let name = EventsContract.interface
    let interfaceDescription: String
    let engine: DaemonEngine
    let trust: Trust
    /// The error a subscriber that falls behind ends with, made once: every live subscription
    /// keeps it, and one of its own cost each subscriber 0.2 KiB.
    private let lagged: VarlinkError

    /// The interface over `engine`, with `trust` deciding who sees what.
    init(interfaceDescription: String, engine: DaemonEngine, trust: Trust) {
        self.interfaceDescription = interfaceDescription
        self.engine = engine
        self.trust = trust
        self.lagged = VarlinkError(.lagged(queueLimit: engine.registry.queueLimit))
    }

    /// The method table.
    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.answer(EventsContract.subscribe) { try await subscribe($0, $1) }
        return methods
    }

    private func subscribe(_ parameters: SubscribeParameters, _ context: VarlinkCallContext) async throws
        -> VarlinkAnswer<SubscribeReply>
    {
        let peer = context.peer
        if let refusal = trust.acquire(.subscription, for: peer.uid) { throw refusal }
        // Released when this returns, unless the subscription goes on through a stream,
        // which then releases it when it ends.
        var held = true
        defer { if held { trust.release(.subscription, for: peer.uid) } }
        let (identity, visible, filter) = watch(parameters, context)
        // Checked again at sending: events queued before a reload withdrew a grant are dropped.
        func send(_ event: EventReply.Encoded) async throws {
            identity.refresh()
            guard visible(event.account, event.provider, event.owner) else { return }
            try await context.send(event.reply)
        }
        let (subscription, backlog, current, accounts) = await engine.subscribe(filter: filter, since: parameters.since)
        defer { if held { subscription.cancel() } }
        try await context.send(VarlinkReply(SubscribeReply(ready: .init(sequence: current))))
        try await sendBacklog(
            backlog,
            current: current,
            accounts: accounts,
            identity: identity,
            visible: visible,
            context
        ) { try await send($0) }
        do {
            let stream = try await handOff(subscription, context, identity: identity, visible: visible)
            // The call goes on without this task; the stream lets go of the subscription and
            // its slot when it ends.
            held = false
            return .continuing(on: stream)
        } catch let lagged as SubscriberLaggedError {
            // Fell behind before the hand-off, while the backlog was sent: a call's own error,
            // logged as the call's (after the hand-off the server logs it, as for any stream).
            context.logger.notice(
                "subscriber fell behind and was cut off",
                metadata: ["queue_limit": "\(lagged.queueLimit)"]
            )
            throw VarlinkError(.lagged(queueLimit: lagged.queueLimit))
        }
    }

    /// What the subscriber asked for and may see: its identity as followed, the strict check made
    /// at sending, and the engine's filter. The policy is read at every event, and the caller's
    /// groups again after each reload (and every half minute), so a grant or membership added or
    /// withdrawn applies to a live subscription too; sending looks the groups up anew when stale.
    private func watch(_ parameters: SubscribeParameters, _ context: VarlinkCallContext)
        -> (identity: FollowedIdentity, visible: EventFilter.Visibility, filter: EventFilter)
    {
        let peer = context.peer
        let identity = FollowedIdentity(of: peer, trust: trust)
        let (visible, visibleOrStale) = Self.visibility(
            of: peer.uid,
            identity: identity,
            trust: trust,
            share: context.scope.restriction as? ShareConsumer
        )
        let filter = EventFilter(
            accounts: parameters.accounts.map { ids(of: $0, caller: peer.uid) },
            kinds: parameters.kinds.map(Set.init),
            visibility: visibleOrStale
        )
        return (identity, visible, filter)
    }

    /// Who may see an event, strictly (the caller's rights with its groups as looked up), and
    /// leniently for the engine's filter (also what a group could allow while the groups are stale).
    private static func visibility(of uid: UInt32, identity: FollowedIdentity, trust: Trust, share: ShareConsumer?)
        -> (strict: EventFilter.Visibility, lenient: EventFilter.Visibility)
    {
        // A connection that joined a share sees the shared accounts' events and no others.
        let shared = share?.share
        let visible: EventFilter.Visibility = { account, provider, owner in
            if let shared, shared.endReason != nil || !shared.accounts.contains(account) { return false }
            // Asked twice for every event and subscriber; root and the owner need no policy.
            return AccessPolicy.holdsAllRights(uid: uid, owner: owner)
                || trust.policy.rights(of: identity.current, account: account, provider: provider, owner: owner)
                    .contains(.observe)
        }
        // The engine's filter also passes what stale groups refuse, if a group could allow it:
        // a membership added since may, and the groups are looked up again only for an event
        // that reaches the sender, which then checks strictly. With the strict check alone, a
        // subscriber that sees nothing but what the new membership allows would never have its
        // groups looked up, and never see it. Such events count towards the subscriber's queue
        // until the lookup ends, as any other.
        let visibleOrStale: EventFilter.Visibility = { account, provider, owner in
            if visible(account, provider, owner) { return true }
            if let shared, !shared.accounts.contains(account) { return false }
            return trust.policy.groupsMayAllowObserving(account: account, provider: provider, owner: owner)
                && identity.isStale
        }
        return (visible, visibleOrStale)
    }

    /// Sends what the subscriber missed: the events since its `since`, or a resync listing the
    /// accounts it may see now when those are gone from the history.
    private func sendBacklog(
        _ backlog: EventRegistry<EventReply.Encoded>.Backlog,
        current: UInt64,
        accounts: [Account],
        identity: FollowedIdentity,
        visible: EventFilter.Visibility,
        _ context: VarlinkCallContext,
        send: (EventReply.Encoded) async throws -> Void
    ) async throws {
        switch backlog {
        case .upToDate:
            break
        case .replay(let missed):
            for event in missed { try await send(event) }
        case .resync:
            // Listed by the engine with the lenient filter: only what fresh groups allow is sent.
            identity.refresh()
            let visibleAccounts = accounts.filter { visible($0.id, $0.provider, $0.ownerUID) }
            try await context.send(
                VarlinkReply(SubscribeReply(resync: .init(sequence: current, accounts: visibleAccounts)))
            )
        }
    }

    /// Leaves the subscription's live events to the call's reply stream: each is handed to the
    /// stream on the engine's event loop, with no task waiting for it, on a connection and in
    /// process alike. When the stream ends, the subscription is cancelled and its per-user slot released.
    private func handOff(
        _ subscription: Subscription<EventReply.Encoded>,
        _ context: VarlinkCallContext,
        identity: FollowedIdentity,
        visible: @escaping EventFilter.Visibility
    ) async throws -> VarlinkReplyStream {
        let queueLimit = engine.registry.queueLimit
        // Subscribe only streams (`requiresMore`), so every call of it has a stream, but one
        // that asks for no reply at all (`oneway`), which is refused.
        guard let stream = await context.replyStream(fallingBehindAfter: queueLimit, then: lagged) else {
            throw VarlinkError.expectedMore
        }
        let sink = StreamedEvents(stream: stream, identity: identity, visible: visible, holdLimit: queueLimit)
        guard try subscription.attach(sink) else { throw CancellationError() }
        // Every live subscription keeps this, not the call's context (0.1 KiB more). The
        // server logs a cut-off itself.
        let (trust, uid) = (self.trust, context.peer.uid)
        stream.whenEnded { _ in
            subscription.cancel()
            trust.release(.subscription, for: uid)
        }
        return stream
    }
}

/// A subscriber's events, passed to its connection as they are published, each checked again
/// against the policy and the caller's groups before it is sent. Looking the groups up anew
/// (after a reload, or when old) may block (NSS, LDAP), and `deliver` runs on the engine's
/// event loop, which every subscriber and every change waits on: so a stale identity is looked up by
/// a task of the subscriber's own, and its events are held back, in order, until that is done
/// (at most `holdLimit` of them: past that the subscriber has fallen behind).
private final class StreamedEvents: EventSink {
    let stream: VarlinkReplyStream
    let identity: FollowedIdentity
    let visible: EventFilter.Visibility
    let holdLimit: Int
    /// The events held back while a lookup runs; nil when none runs.
    private let held = Mutex<[EventReply.Encoded]?>(nil)

    init(
        stream: VarlinkReplyStream,
        identity: FollowedIdentity,
        visible: @escaping EventFilter.Visibility,
        holdLimit: Int
    ) {
        self.stream = stream
        self.identity = identity
        self.visible = visible
        self.holdLimit = holdLimit
    }

    func deliver(_ event: EventReply.Encoded) -> Bool {
        enum Route { case now, held, lookUp, tooMany }
        let route = held.withLock { held -> Route in
            if let count = held?.count {
                guard count < holdLimit else { return .tooMany }
                held?.append(event)
                return .held
            }
            guard identity.isStale else { return .now }
            held = [event]
            return .lookUp
        }
        switch route {
        case .now: return send(event)
        case .held: return true
        case .tooMany:
            stream.fallBehind()
            return false
        case .lookUp:
            Task.detached { self.lookUpThenSendHeld() }
            return true
        }
    }

    private func lookUpThenSendHeld() {
        while true {
            // Before every batch: a reload may come while one is sent, and the events that
            // arrive meanwhile are held, not looked at by `deliver`.
            identity.refresh()
            let events = held.withLock { held -> [EventReply.Encoded] in
                let events = held ?? []
                held = events.isEmpty ? nil : []
                return events
            }
            guard !events.isEmpty else { return }
            for event in events { _ = send(event) }
        }
    }

    private func send(_ event: EventReply.Encoded) -> Bool {
        guard visible(event.account, event.provider, event.owner) else { return true }
        return stream.send(event.reply)
    }
}

/// How one event goes on the wire: encoded once, sent to every subscriber as is, with the
/// account it is about so that visibility can be checked again just before it is sent.
enum EventReply {
    /// The wire form of one event and whose account it concerns.
    struct Encoded: Sendable {
        var account: String
        var provider: String
        var owner: UInt32
        var reply: VarlinkReply
    }

    static func encode(_ event: AuthEvent) -> Encoded {
        // An AuthEvent is strings, numbers and dates; encoding it cannot fail.
        Encoded(
            account: event.account,
            provider: event.provider,
            owner: event.owner,
            reply: ((try? VarlinkReply(SubscribeReply(event: event))) ?? .empty).framed(continues: true)
        )
    }
}

extension EventsInterface {
    /// The ids `references` name: a name of the caller's own stands for its account's id, as
    /// in every other method; what names no account stays as given (and matches nothing).
    func ids(of references: [String], caller: UInt32) -> Set<String> {
        let known = engine.view.list()
        return Set(references.map { known.id(of: $0, caller: caller) ?? $0 })
    }
}
