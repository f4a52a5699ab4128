import FoundationEssentials
import SesameCore
import SesameWire

/// `io.sesame.Events`: subscriptions to changes of login sessions.
public enum EventsContract {
    /// The interface's name.
    public static let interface = "io.sesame.Events"

    /// `Subscribe`: `ready`, then the events asked for, as they happen; only with `more`.
    public static let subscribe = VarlinkMethod<SubscribeParameters, SubscribeReply>(
        "Subscribe",
        of: interface,
        requiresMore: true
    )

    /// Every method.
    public static let methods: [any VarlinkMethodDescription] = [subscribe]
}

/// `Subscribe`'s parameters: which events, and from where to resume.
public struct SubscribeParameters: Sendable, Codable, Hashable {
    /// Only these accounts' events.
    public var accounts: [String]?
    /// Only these kinds of event.
    public var kinds: [AuthEvent.Kind]?
    /// Resume after this sequence number.
    public var since: UInt64?

    /// Creates the parameters.
    public init(accounts: [String]?, kinds: [AuthEvent.Kind]?, since: UInt64?) {
        self.accounts = accounts
        self.kinds = kinds
        self.since = since
    }
}

/// One reply of `Subscribe`: ready, an event, or a resync.
public struct SubscribeReply: Sendable, Codable, Hashable {
    /// The subscription is live from `sequence` on.
    public struct Ready: Sendable, Codable, Hashable {
        /// The last sequence number before the subscription.
        public var sequence: UInt64
        /// Creates it.
        public init(sequence: UInt64) { self.sequence = sequence }
    }

    /// Every account as it is now, when the missed events are no longer kept.
    public struct Resync: Sendable, Codable, Hashable {
        /// The sequence number the state is current at.
        public var sequence: UInt64
        /// The accounts.
        public var accounts: [Account]
        /// Creates it.
        public init(sequence: UInt64, accounts: [Account]) {
            self.sequence = sequence
            self.accounts = accounts
        }
    }

    /// The first reply.
    public var ready: Ready?
    /// One change to a session.
    public var event: AuthEvent?
    /// The full current state.
    public var resync: Resync?

    /// Creates a reply with one of its members.
    public init(ready: Ready? = nil, event: AuthEvent? = nil, resync: Resync? = nil) {
        self.ready = ready
        self.event = event
        self.resync = resync
    }
}

/// `io.sesame.Admin`: root-only maintenance.
public enum AdminContract {
    /// The interface's name.
    public static let interface = "io.sesame.Admin"

    /// `Rekey`: the store sealed again under a new key.
    public static let rekey = VarlinkMethod<NoParameters, RekeyReply>("Rekey", of: interface)
    /// `Stats`: counts for monitoring.
    public static let stats = VarlinkMethod<NoParameters, StatsReply>("Stats", of: interface)

    /// Every method.
    public static let methods: [any VarlinkMethodDescription] = [rekey, stats]
}

/// `Rekey`'s reply.
public struct RekeyReply: Sendable, Codable, Hashable {
    /// The id of the key the store is now sealed with.
    public var keyId: String
    /// Creates the reply.
    public init(keyId: String) { self.keyId = keyId }
}

/// `Stats`' reply.
public struct StatsReply: Sendable, Codable, Hashable {
    /// How many accounts exist.
    public var accounts: Int
    /// How many subscriptions are live.
    public var subscribers: Int
    /// The last event's sequence number.
    public var sequence: UInt64
    /// The id of the store's key.
    public var keyId: String

    /// Creates the reply.
    public init(accounts: Int, subscribers: Int, sequence: UInt64, keyId: String) {
        self.accounts = accounts
        self.subscribers = subscribers
        self.sequence = sequence
        self.keyId = keyId
    }
}
