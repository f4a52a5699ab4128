import FoundationEssentials
import Logging
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Synchronization

/// One open share: whose it is, which accounts it offers, until when, and, once it has ended, why.
final class Share: Sendable {
    /// Names the share in `Join` and in the log: 128 random bits, so no one finds another's.
    let id: String
    /// The uid that opened it, the only one that may join it.
    let owner: UInt32
    /// The ids of the accounts offered.
    let accounts: Set<String>
    /// Whether `GetIDToken` is passed on.
    let idToken: Bool
    /// When it ends by itself, if it does.
    let expiresAt: Date?
    private let ending = Mutex<String?>(nil)

    /// A share of `accounts` opened by `owner`, with an id of its own.
    init(owner: UInt32, accounts: Set<String>, idToken: Bool, expiresAt: Date?) {
        var random = SystemRandomNumberGenerator()
        self.id = (0..<2).map { _ in String(random.next() as UInt64, radix: 16) }.joined(separator: "-")
        self.owner = owner
        self.accounts = accounts
        self.idToken = idToken
        self.expiresAt = expiresAt
    }

    /// Why the share ended, or nil while it is open.
    var endReason: String? { ending.withLock { $0 } }

    /// Ends the share for `reason`; the first reason given stays.
    func end(_ reason: String) {
        ending.withLock { if $0 == nil { $0 = reason } }
    }

    /// Logs `message` about the share at info, naming it. `logger` is a call's, which spends
    /// the line from its owner's budget across all their calls and shares
    /// (`VarlinkCallContext.logger`): each share opened and hung up at once, or a consumer in a
    /// loop, would otherwise write lines without end.
    func log(_ message: Logger.Message, _ metadata: Logger.Metadata, _ logger: Logger) {
        logger.info(message, metadata: metadata.merging(["share": "\(id)"]) { $1 })
    }

    /// The share as `Open` reports it.
    var info: ShareInfo {
        ShareInfo(id: id, accounts: accounts.sorted(), expiresAt: expiresAt, idToken: idToken)
    }
}

/// What a connection that joined a share is held to: only the consumer methods
/// (`SharesContract.consumerMethods`), only the share's accounts, only while the share is open.
struct ShareConsumer: ConnectionRestriction {
    let share: Share
    /// The process the share's relay serves on this connection, as the relay saw it.
    let consumerUID: Int?
    let consumerPID: Int?

    /// ShareEnded once the share has ended; NotShared for a method a share does not pass on.
    func refusal(of method: String) -> VarlinkError? {
        if let reason = share.endReason { return VarlinkError(.shareEnded(share: share.id, reason: reason)) }
        if SharesContract.consumerMethods.contains(method) { return nil }
        if share.idToken, method == AccountsContract.getIDToken.qualifiedName { return nil }
        return VarlinkError(.notShared(method: method))
    }

    /// What of `rights` on `account` the share passes on: seeing it and using its access token,
    /// for the shared accounts only; every other account is as if it did not exist.
    func limit(_ rights: AccountRights, on account: String) -> AccountRights {
        share.accounts.contains(account) ? rights.intersection([.observe, .use]) : []
    }

    /// Logs that a token of `account` went out through the share (never the token itself),
    /// within its owner's log budget; the next line logged says how many were held back.
    func handedOut(_ what: String, of account: String, logger: Logger) {
        share.log("share handed out \(what)", consumerMetadata.merging(["account": "\(account)"]) { $1 }, logger)
    }

    /// The consumer as the relay saw it, as log metadata.
    var consumerMetadata: Logger.Metadata {
        [
            "consumer_uid": "\(consumerUID.map(String.init) ?? "-")",
            "consumer_pid": "\(consumerPID.map(String.init) ?? "-")",
        ]
    }
}

/// The shares open now, at most `perUser` per uid: each holds a task and a subscription.
final class Shares: Sendable {
    /// How many shares one uid may have open: each may relay as many connections as its relay
    /// allows (16 for sesamectl's), all of them counted as the owner's.
    static let perUser = 4
    /// How many accounts one share may offer.
    static let accountsPerShare = 16
    private let open = Mutex<[String: Share]>([:])

    /// Adds `share`, or refuses it when its owner has `perUser` open already.
    func add(_ share: Share) throws(VarlinkError) {
        try open.withLock { open throws(VarlinkError) in
            guard open.values.count(where: { $0.owner == share.owner }) < Self.perUser else {
                throw VarlinkError(.tooManyShares(limit: Self.perUser))
            }
            open[share.id] = share
        }
    }

    /// Forgets `share`, which has ended.
    func remove(_ share: Share) {
        _ = open.withLock { $0.removeValue(forKey: share.id) }
    }

    /// The open share `id` names if `uid` opened it; nil otherwise, so that a share of another
    /// user's cannot be told from one that does not exist.
    func share(_ id: String, openedBy uid: UInt32) -> Share? {
        open.withLock { $0[id] }.flatMap { $0.owner == uid && $0.endReason == nil ? $0 : nil }
    }
}
