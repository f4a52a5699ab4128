import SesameCore
import SesameVarlink
import SesameWire

#if canImport(Glibc)
    import Glibc
#endif

/// The process on the other end of a call, and what the access policy in force lets it do.
struct Caller: Sendable {
    let peer: PeerCredentials
    let identity: CallerIdentity
    let policy: AccessPolicy
    /// The share the call's connection joined, which limits everything above to its accounts.
    let share: ShareConsumer?

    /// The caller of a call on `context`'s connection.
    init(_ context: VarlinkCallContext, trust: Trust) {
        // One reading of the policy, for the identity and for judging it: the same rules for
        // both even across a reload, and one lock and copy less on every call.
        let policy = trust.policy
        self.peer = context.peer
        self.identity = trust.identity(of: context.peer, under: policy)
        self.policy = policy
        self.share = context.scope.restriction as? ShareConsumer
    }

    var isRoot: Bool { peer.uid == 0 }

    /// Whether the caller may mend this sesamed's provider files, and so be shown what is wrong
    /// in them and have them checked at the provider: root, or the user a per-user sesamed runs
    /// as, whose own directory it reads; never through a share.
    var mayMendProviders: Bool { (peer.uid == 0 || peer.uid == getuid()) && share == nil }

    /// What the caller may do with `account`.
    func rights(on account: Account) -> AccountRights {
        let rights = policy.rights(of: identity, on: account)
        return share?.limit(rights, on: account.id) ?? rights
    }

    /// Whether the caller may know that `account` exists.
    func mayObserve(_ account: Account) -> Bool {
        rights(on: account).contains(.observe)
    }

    /// Throws unless the caller holds `required` on `account`, which the caller named
    /// `reference`. An account the caller may not observe is `NoSuchAccount` in the caller's own
    /// words, exactly like one that does not exist (a name never comes back as an id); one it
    /// may observe but not act on this way is `PermissionDenied`.
    func check(_ required: AccountRights, on account: Account, namedAs reference: String) throws {
        let rights = rights(on: account)
        guard rights.contains(.observe) else { throw SessionError.noSuchAccount(reference) }
        guard rights.contains(required) else { throw VarlinkError.permissionDenied }
    }
}

extension DaemonEngine {
    /// The account `reference` names (its id, or for the caller's own accounts a name or a
    /// provider's name, `Sequence.id(of:caller:)`) if the caller holds `required` on it
    /// (`Caller.check`). Read from the engine's view: it never waits for a save.
    nonisolated func account(_ reference: String, for caller: Caller, requiring required: AccountRights = .observe)
        throws -> Account
    {
        let account = try (try? view.account(reference)) ?? view.account(named: reference, for: caller)
        try caller.check(required, on: account, namedAs: reference)
        return account
    }
}

extension SessionReadView {
    /// The caller's account that `reference`, which is no account's id, names (a name or a
    /// provider's name); `NoSuchAccount` in the caller's own words when it names none. Through a
    /// share, only the shared accounts have names: the others are not there to be counted.
    func account(named reference: String, for caller: Caller) throws(SessionError) -> Account {
        var accounts = list()
        if let shared = caller.share?.share.accounts { accounts.removeAll { !shared.contains($0.id) } }
        guard let id = accounts.id(of: reference, caller: caller.peer.uid) else { throw .noSuchAccount(reference) }
        return try account(id)
    }
}
