import SesameCore
import SesameVarlink

/// The process on the other end of a call, and what it may do. The owner of an account and root
/// may do everything with it; anyone else cannot tell it exists.
struct Caller: Sendable {
    let peer: PeerCredentials

    var isRoot: Bool { peer.uid == 0 }

    /// Whether the caller may see and act on `account`.
    func mayAccess(_ account: Account) -> Bool {
        isRoot || account.ownerUID == peer.uid
    }

    /// The owners whose events the caller may see; nil for all.
    var visibleOwners: Set<UInt32>? {
        isRoot ? nil : [peer.uid]
    }
}

extension SessionEngine {
    /// The account, or `NoSuchAccount` when it does not exist or the caller may not see it, so
    /// the two cannot be told apart.
    func account(_ id: String, visibleTo caller: Caller) throws(SessionError) -> Account {
        let account = try account(id)
        guard caller.mayAccess(account) else { throw .noSuchAccount(id) }
        return account
    }
}
