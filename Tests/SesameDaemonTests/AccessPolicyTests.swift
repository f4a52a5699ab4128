import Foundation
import SesameVarlink
import Synchronization
import Testing

@testable import SesameDaemon

@Suite struct AccessPolicyTests {
    private let owner = CallerIdentity(uid: 1000, groups: [1000])
    private let root = CallerIdentity(uid: 0, groups: [0])
    private let admin = CallerIdentity(uid: 2000, groups: [2000, 900])
    private let observer = CallerIdentity(uid: 3000, groups: [3000])
    private let user = CallerIdentity(uid: 4000, groups: [4000, 950])
    private let stranger = CallerIdentity(uid: 5000, groups: [5000])

    private var policy: AccessPolicy {
        AccessPolicy(
            adminGroup: 900,
            grants: [
                Grant(principal: .user(3000), target: .account("google-1"), rights: .observe),
                Grant(principal: .group(950), target: .provider("google"), rights: .use),
            ]
        )
    }

    private func rights(_ caller: CallerIdentity, account: String = "google-1", provider: String = "google")
        -> AccountRights
    {
        policy.rights(of: caller, account: account, provider: provider, owner: 1000)
    }

    @Test func ownerAndRootMayDoEverything() {
        #expect(rights(owner) == .all && rights(root) == .all)
    }

    @Test func groupsMayAllowObservingWhereAGroupsGrantOrTheAdminGroupCouldSee() {
        let byGroup = AccessPolicy(grants: [Grant(principal: .group(950), target: .provider("google"), rights: .use)])
        #expect(byGroup.groupsMayAllowObserving(account: "google-1", provider: "google", owner: 1000))
        #expect(!byGroup.groupsMayAllowObserving(account: "kakao-1", provider: "kakao", owner: 1000))
        let byUser = AccessPolicy(grants: [Grant(principal: .user(3000), target: .account("kakao-1"), rights: .use)])
        #expect(!byUser.groupsMayAllowObserving(account: "kakao-1", provider: "kakao", owner: 1000))
        #expect(AccessPolicy(adminGroup: 900).groupsMayAllowObserving(account: "kakao-1", provider: "kakao", owner: 1))
    }

    @Test func theAdminGroupObservesAndLogsOutButNeverUses() {
        #expect(rights(admin) == [.observe, .logout])
        #expect(policy.observesEverything(admin) && !policy.observesEverything(observer))
    }

    @Test func grantsGiveWhatTheySayOnWhatTheyName() {
        #expect(rights(observer) == .observe)
        #expect(rights(observer, account: "google-2").isEmpty, "the grant names one account")
        #expect(rights(user) == [.observe, .use], "use includes observe")
        #expect(rights(user, account: "kakao-1", provider: "kakao").isEmpty, "the grant names one provider")
    }

    @Test func aGrantNamingAnOwnerCoversOnlyTheirAccounts() {
        let policy = AccessPolicy(grants: [
            Grant(principal: .user(3000), target: .provider("google"), rights: .use, owner: 1000)
        ])
        #expect(policy.rights(of: observer, account: "google-1", provider: "google", owner: 1000) == [.observe, .use])
        #expect(policy.rights(of: observer, account: "google-9", provider: "google", owner: 6666).isEmpty)
    }

    @Test func strangersGetNothing() {
        #expect(rights(stranger).isEmpty)
    }

    @Test func grantsAndTheAdminGroupAreReadFromTheConfig() throws {
        let text = """
            [access]
            admin_group = 900

            [limits]
            connections_per_user = 10
            subscriptions_per_user = 5
            logins_per_user = 2

            [[grants]]
            user = 3000
            account = "google-1"
            allow = ["observe"]

            [[grants]]
            group = "root"
            provider = "google"
            allow = ["use"]
            """
        let base = DaemonConfiguration.defaults(environment: [:], uid: 0)
        let configuration = try ConfigurationFile.parse(text, path: "t.toml", onto: base)
        #expect(configuration.accessPolicy == policyFromConfig)
        #expect(configuration.userLimits == UserLimits(connections: 10, subscriptions: 5, logins: 2))
    }

    private var policyFromConfig: AccessPolicy {
        AccessPolicy(
            adminGroup: 900,
            grants: [
                Grant(principal: .user(3000), target: .account("google-1"), rights: .observe),
                Grant(principal: .group(0), target: .provider("google"), rights: [.observe, .use]),
            ]
        )
    }

    @Test(arguments: [
        (
            "[[grants]]\nuser = 1\nallow = [\"use\"]",
            ConfigurationError.invalidValue(path: "t.toml", key: "grants[0]", reason: "needs an account or a provider")
        ),
        (
            "[[grants]]\naccount = \"a\"\nallow = [\"use\"]",
            .invalidValue(path: "t.toml", key: "grants[0]", reason: "needs a user or a group")
        ),
        (
            "[[grants]]\nuser = 1\ngroup = 2\naccount = \"a\"\nallow = [\"use\"]",
            .invalidValue(path: "t.toml", key: "grants[0]", reason: "names more than one user or group")
        ),
        (
            "[[grants]]\nuser = 1\naccount = \"a\"\nallow = [\"read\"]",
            .invalidValue(path: "t.toml", key: "grants[0].allow", reason: "may hold only \"observe\" and \"use\"")
        ),
        (
            "[[grants]]\nuser = \"no-such-user-here\"\naccount = \"a\"\nallow = [\"use\"]",
            .invalidValue(
                path: "t.toml",
                key: "grants[0].user",
                reason: "names user 'no-such-user-here', which does not exist"
            )
        ),
        (
            "[[grants]]\nuser = 1\naccount = \"a\"\nallow = [\"use\"]\nwhy = 1",
            .unknownKey(path: "t.toml", key: "grants[0].why")
        ),
        (
            "[access]\nadmin_group = \"no-such-group-here\"",
            .invalidValue(
                path: "t.toml",
                key: "access.admin_group",
                reason: "names group 'no-such-group-here', which does not exist"
            )
        ),
        ("grants = 1", .wrongType(path: "t.toml", key: "grants", expected: "an array of tables ([[grants]])")),
    ])
    func refusesBadGrantsByName(_ text: String, _ expected: ConfigurationError) {
        let base = DaemonConfiguration.defaults(environment: [:], uid: 0)
        #expect(throws: expected) { try ConfigurationFile.parse(text, path: "t.toml", onto: base) }
    }

    @Test func connectionsOfAllUsersAreBoundedWithAReserveForRoot() {
        let peer = { (uid: UInt32) in PeerCredentials(pid: 1, uid: uid, gid: uid) }
        let trust = Trust(policy: AccessPolicy(), limits: UserLimits(totalConnections: 3), descriptorLimit: 100_000)
        for uid: UInt32 in [1000, 1001, 1002] { #expect(trust.admit(peer(uid)) == nil) }
        #expect(trust.admit(peer(1003))?.name == "io.sesame.Varlink.TooManyConnections", "a fourth user is refused")
        for _ in 0..<UserLimits.rootReserve { #expect(trust.admit(peer(0)) == nil, "root is still served") }
        #expect(trust.admit(peer(0)) != nil, "up to its reserve")
        trust.release(peer(1000))
        for _ in 0..<UserLimits.rootReserve { trust.release(peer(0)) }
        #expect(trust.admit(peer(1003)) == nil, "a connection given back makes room")
    }

    @Test func theTotalStaysBelowTheDescriptorLimitWhateverIsConfigured() {
        let trust = Trust(policy: AccessPolicy(), limits: UserLimits(totalConnections: 4096), descriptorLimit: 300)
        #expect(trust.totalConnections == 300 - UserLimits.descriptorHeadroom)
    }

    @Test func limitsArePerUIDAndGivenBack() {
        let trust = Trust(policy: AccessPolicy(), limits: UserLimits(connections: 2, subscriptions: 1, logins: 1))
        #expect(trust.acquire(.connection, for: 7) == nil && trust.acquire(.connection, for: 7) == nil)
        #expect(trust.acquire(.connection, for: 7)?.name == "io.sesame.Varlink.TooManyConnections")
        #expect(trust.acquire(.connection, for: 8) == nil, "another uid is not affected")
        trust.release(.connection, for: 7)
        #expect(trust.acquire(.connection, for: 7) == nil)
        #expect(trust.acquire(.subscription, for: 7) == nil)
        #expect(trust.acquire(.subscription, for: 7)?.name == "io.sesame.Events.TooManySubscriptions")
    }

    /// A lookup that began before a reload and ends after it (a slow LDAP) found the memberships
    /// from before: the lookups after the reload do not take them from it.
    @Test(.timeLimit(.minutes(1))) func groupsLookedUpAcrossAReloadAreNotKeptForAfterIt() async throws {
        let lookUp = HeldLookUp(firstFinds: [900])
        let policy = AccessPolicy(adminGroup: 900)
        let trust = Trust(policy: policy, limits: UserLimits(), groups: lookUp.groups)
        let peer = PeerCredentials(pid: 1, uid: 2000, gid: 2000)
        let (found, finding) = AsyncStream<CallerIdentity>.makeStream()
        // On a thread of its own: the lookup blocks, as one in the user database may.
        DispatchQueue.global().async { finding.yield(trust.identity(of: peer)) }
        await lookUp.untilHeld()
        trust.update(policy: policy, limits: UserLimits())  // gpasswd -d, then SIGHUP
        lookUp.letGo()
        var before = found.makeAsyncIterator()
        #expect(await before.next()?.groups.contains(900) == true)
        #expect(!trust.identity(of: peer).groups.contains(900))
    }
}

/// A group lookup whose first call waits until the test lets it go, then finds `firstFinds`;
/// every later one finds nothing.
private final class HeldLookUp: Sendable {
    private let firstFinds: Set<UInt32>
    private let calls = Mutex(0)
    private let released = DispatchSemaphore(value: 0)
    private let (held, holding) = AsyncStream<Void>.makeStream()

    init(firstFinds: Set<UInt32>) { self.firstFinds = firstFinds }

    @Sendable func groups(_ uid: UInt32) -> Set<UInt32> {
        let isFirst = calls.withLock { calls in
            calls += 1
            return calls == 1
        }
        guard isFirst else { return [] }
        holding.yield()
        released.wait()
        return firstFinds
    }

    /// Returns once the first lookup is waiting.
    func untilHeld() async {
        var iterator = held.makeAsyncIterator()
        _ = await iterator.next()
    }

    func letGo() { released.signal() }
}
