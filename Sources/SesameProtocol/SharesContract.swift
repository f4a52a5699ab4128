import FoundationEssentials
import SesameWire

/// `io.sesame.Shares`: a few accounts' access tokens offered on a socket of their owner's
/// (`sesamectl share`), without the rest of what the owner may do.
public enum SharesContract {
    /// The interface's name.
    public static let interface = "io.sesame.Shares"

    /// What a connection that joined a share may call: reading its accounts and their access
    /// tokens, following their events, and saying a token was refused. `GetIDToken` only where
    /// the share was opened with `idToken`.
    public static let consumerMethods: Set<String> = [
        AccountsContract.list.qualifiedName, AccountsContract.get.qualifiedName,
        AccountsContract.getToken.qualifiedName, AccountsContract.reportRejected.qualifiedName,
        EventsContract.subscribe.qualifiedName,
        VarlinkServiceContract.getInfo.qualifiedName, VarlinkServiceContract.getInterfaceDescription.qualifiedName,
    ]

    /// `Open`: the share as opened, then, when it ends, why; only with `more`.
    public static let open = VarlinkMethod<OpenShareParameters, OpenShareReply>(
        "Open",
        of: interface,
        requiresMore: true
    )
    /// `Join`: this connection made the share's.
    public static let join = VarlinkMethod<JoinShareParameters, JoinShareReply>("Join", of: interface)

    /// Every method.
    public static let methods: [any VarlinkMethodDescription] = [open, join]
}

/// `Open`'s parameters: which accounts, for how long, and what the share is called in the log.
public struct OpenShareParameters: Sendable, Codable, Hashable {
    /// The accounts shared (ids or the caller's names).
    public var accounts: [String]
    /// Seconds until the share ends by itself; none to last until the call ends.
    public var expiresIn: Int?
    /// Whether `GetIDToken` is passed on too.
    public var idToken: Bool?
    /// Where the share is served, for the log only.
    public var socket: String?

    /// Creates the parameters.
    public init(accounts: [String], expiresIn: Int? = nil, idToken: Bool? = nil, socket: String? = nil) {
        self.accounts = accounts
        self.expiresIn = expiresIn
        self.idToken = idToken
        self.socket = socket
    }
}

/// A share as it was opened.
public struct ShareInfo: Sendable, Codable, Hashable {
    /// Names the share in `Join` and in the log; unguessable.
    public var id: String
    /// The ids of the accounts shared.
    public var accounts: [String]
    /// When the share ends by itself, if it does.
    public var expiresAt: Date?
    /// Whether `GetIDToken` is passed on.
    public var idToken: Bool

    /// Creates it.
    public init(id: String, accounts: [String], expiresAt: Date?, idToken: Bool) {
        self.id = id
        self.accounts = accounts
        self.expiresAt = expiresAt
        self.idToken = idToken
    }
}

/// One reply of `Open`: the share as opened, then, last, why it ended.
public struct OpenShareReply: Sendable, Codable, Hashable {
    /// The first reply: the share is open.
    public var share: ShareInfo?
    /// The final reply: why the share ended.
    public var ended: String?

    /// Creates a reply with one of its members.
    public init(share: ShareInfo? = nil, ended: String? = nil) {
        self.share = share
        self.ended = ended
    }
}

/// `Join`'s parameters: the share this connection serves, and whom, as its relay saw them.
public struct JoinShareParameters: Sendable, Codable, Hashable {
    /// The share's id.
    public var share: String
    /// The uid of the process connected to the share's socket, as `SO_PEERCRED` gave it there.
    public var consumerUid: Int?
    /// That process's pid.
    public var consumerPid: Int?

    /// Creates the parameters.
    public init(share: String, consumerUid: Int? = nil, consumerPid: Int? = nil) {
        self.share = share
        self.consumerUid = consumerUid
        self.consumerPid = consumerPid
    }
}

/// `Join`'s reply.
public struct JoinShareReply: Sendable, Codable, Hashable {
    /// The ids of the accounts this connection may now see.
    public var accounts: [String]
    /// Creates the reply.
    public init(accounts: [String]) { self.accounts = accounts }
}
