import SesameCore

/// What a caller may do with one account. Rights are checked per call against the caller's
/// uid and groups; anything not granted is refused.
public struct AccountRights: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8

    /// Creates rights from their bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// See that the account exists, its state (`Get`, `List`) and its events.
    public static let observe = AccountRights(rawValue: 1 << 0)
    /// Get its access token (`GetToken`) and report it rejected (`ReportRejected`).
    public static let use = AccountRights(rawValue: 1 << 1)
    /// End its session (`Logout`).
    public static let logout = AccountRights(rawValue: 1 << 2)
    /// Everything else: `Refresh`, `Remove`.
    public static let manage = AccountRights(rawValue: 1 << 3)

    /// What the owner and root have.
    public static let all: AccountRights = [.observe, .use, .logout, .manage]
}

/// Who a grant is for: one uid, or every member of a group.
public enum Principal: Sendable, Hashable {
    /// The user with this uid.
    case user(UInt32)
    /// Every process whose primary or supplementary groups include this gid.
    case group(UInt32)
}

/// Which accounts a grant covers.
public enum GrantTarget: Sendable, Hashable {
    /// One account, by id.
    case account(String)
    /// Every account of this provider.
    case provider(String)
}

/// One `[[grants]]` entry of the config: `rights` (observe, use) on `target` for `principal`.
public struct Grant: Sendable, Hashable {
    /// Who gets the rights.
    public var principal: Principal
    /// Which accounts they cover.
    public var target: GrantTarget
    /// The rights granted; `use` includes `observe`.
    public var rights: AccountRights
    /// Only accounts owned by this uid, when set. A provider grant without it also covers
    /// accounts that any user creates under that provider's name.
    public var owner: UInt32?

    /// Creates a grant.
    public init(principal: Principal, target: GrantTarget, rights: AccountRights, owner: UInt32? = nil) {
        self.principal = principal
        self.target = target
        self.rights = rights.contains(.use) ? rights.union(.observe) : rights
        self.owner = owner
    }
}

/// The identity of the process on the other end of a connection.
public struct CallerIdentity: Sendable, Hashable {
    /// Its uid (from `SO_PEERCRED`).
    public var uid: UInt32
    /// Its primary gid (from `SO_PEERCRED`) and the supplementary groups of its user.
    public var groups: Set<UInt32>

    /// Creates an identity.
    public init(uid: UInt32, groups: Set<UInt32>) {
        self.uid = uid
        self.groups = groups
    }
}

/// Who may see, use and change which account: the owner and root everything, the admin group
/// observe and log out any account (never its tokens), and grants what they say.
public struct AccessPolicy: Sendable, Hashable {
    /// Members of this group may list and log out every account, but never read tokens.
    public var adminGroup: UInt32?
    /// Observe and use rights for other users and groups.
    public var grants: [Grant]

    /// Creates a policy.
    public init(adminGroup: UInt32? = nil, grants: [Grant] = []) {
        self.adminGroup = adminGroup
        self.grants = grants
    }

    /// Whether `uid` holds every right on an account of `owner` under any policy: it is root or
    /// the owner. Needs neither the caller's groups nor the policy, so a check that starts
    /// here takes no lock for the common case of users following their own accounts.
    public static func holdsAllRights(uid: UInt32, owner: UInt32) -> Bool {
        uid == 0 || uid == owner
    }

    /// The rights `caller` has on the account `id` of `provider`, owned by `owner`.
    public func rights(of caller: CallerIdentity, account id: String, provider: String, owner: UInt32)
        -> AccountRights
    {
        if Self.holdsAllRights(uid: caller.uid, owner: owner) { return .all }
        var rights: AccountRights = []
        if let adminGroup, caller.groups.contains(adminGroup) { rights.formUnion([.observe, .logout]) }
        for grant in grants where grant.covers(caller) && grant.covers(account: id, provider: provider, owner: owner) {
            rights.formUnion(grant.rights)
        }
        return rights
    }

    /// The rights `caller` has on `account`.
    public func rights(of caller: CallerIdentity, on account: Account) -> AccountRights {
        rights(of: caller, account: account.id, provider: account.provider, owner: account.ownerUID)
    }

    /// Whether a group could let a caller observe the account `id` of `provider`, owned by
    /// `owner`: there is an admin group, or a group's grant covers the account. If not, the
    /// caller's groups cannot change whether it sees the account.
    public func groupsMayAllowObserving(account id: String, provider: String, owner: UInt32) -> Bool {
        adminGroup != nil
            || grants.contains { grant in
                guard case .group = grant.principal, grant.rights.contains(.observe) else { return false }
                return grant.covers(account: id, provider: provider, owner: owner)
            }
    }

    /// Whether `caller` may see every account without asking each time (root and the admin group).
    public func observesEverything(_ caller: CallerIdentity) -> Bool {
        caller.uid == 0 || adminGroup.map(caller.groups.contains) == true
    }
}

extension Grant {
    fileprivate func covers(_ caller: CallerIdentity) -> Bool {
        switch principal {
        case .user(let uid): uid == caller.uid
        case .group(let gid): caller.groups.contains(gid)
        }
    }

    fileprivate func covers(account id: String, provider: String, owner accountOwner: UInt32) -> Bool {
        if let owner, owner != accountOwner { return false }
        return switch target {
        case .account(let account): account == id
        case .provider(let name): name == provider
        }
    }
}
