import Foundation
import Logging
import SesameCore
import SesameCoreTesting
import SesameProtocol
import SesameVarlink
import SesameVarlinkTesting
import SesameWire
import Synchronization

@testable import SesameDaemon

/// The Accounts and Events handlers on an in-memory engine, a test clock and a scripted
/// provider, called in-process as any uid.
struct HandlerFixture {
    let clock = TestClock()
    let provider: ScriptedProvider
    let providers: Providers
    let store = SwitchableStore()
    let engine: DaemonEngine
    let accounts: AccountsInterface
    let events: EventsInterface
    let trust: Trust

    init(
        provider: ScriptedProvider = ScriptedProvider(),
        limits: UserLimits = UserLimits(),
        policy: AccessPolicy = AccessPolicy(),
        queueLimit: Int = 1024,
        groups: @escaping @Sendable (UInt32) -> Set<UInt32> = { _ in [] }
    ) {
        self.provider = provider
        let logger = Logger(label: "test")
        providers = Providers(adapters: [provider], logger: logger)
        engine = DaemonEngine(
            snapshot: SessionSnapshot(),
            clock: clock,
            runningOn: testEngineLoop,
            persistence: store,
            refresher: providers,
            queueLimit: queueLimit,
            encode: EventReply.encode
        )
        trust = Trust(policy: policy, limits: limits, groups: groups)
        accounts = AccountsInterface(interfaceDescription: "", engine: engine, providers: providers, trust: trust)
        events = EventsInterface(interfaceDescription: "", engine: engine, trust: trust)
    }

    /// Calls an Accounts method as `uid`.
    func accounts(
        _ method: any VarlinkMethodDescription,
        _ parameters: some Encodable = NoParameters(),
        as uid: UInt32 = 1000,
        more: Bool = false
    ) async throws -> InProcessCall.Outcome {
        try await InProcessCall(uid: uid).call(accounts, method.name, parameters, more: more)
    }

    /// Returns once `count` subscriptions are registered, yielding (bounded, as `TestClock.untilSleeping`).
    func untilSubscribed(_ count: Int = 1) async {
        _ = await yieldUntil { engine.registry.subscriberCount >= count }
    }

    /// Login parameters of a browser login with a loopback redirect.
    static let browserLogin = LoginParameters(
        provider: "scripted",
        flow: .authorizationCode,
        redirectUri: "http://127.0.0.1:8765/cb",
        scopes: nil
    )

    /// Starts a browser login as `uid` and returns the state its redirect must carry.
    func startBrowserLogin(as uid: UInt32 = 1000) async throws -> String {
        let started = try await accounts(AccountsContract.login, Self.browserLogin, as: uid).reply(as: LoginReply.self)
        guard let state = started.authorization?.state else { throw VarlinkError.invalidParameter("authorization") }
        return state
    }

    /// Imports an account of the scripted provider for `uid` and returns it.
    func imported(subject: String = "alice", as uid: UInt32 = 1000, expiresIn: Int64 = 3600) async throws -> Account {
        try await importTokens(subject: subject, as: uid, expiresIn: expiresIn).reply(as: AccountReply.self).account
    }

    /// Calls ImportTokens as `uid` with tokens about `subject`, and returns what it answered.
    func importTokens(subject: String, as uid: UInt32 = 1000, expiresIn: Int64 = 3600) async throws
        -> InProcessCall.Outcome
    {
        let parameters = provider.importParameters(
            subject: subject,
            access: "AT-\(subject)",
            refresh: "RT-\(subject)",
            expiresIn: expiresIn
        )
        return try await accounts(AccountsContract.importTokens, parameters, as: uid)
    }
}

/// A store in memory that can be made to refuse every save, as a full or read-only disk does.
final class SwitchableStore: SessionPersistence {
    /// What a refused save throws.
    struct RefusedError: Error {}

    private let saved = Mutex((snapshot: SessionSnapshot(), failing: false))
    private let nextHold = Mutex<SaveHold?>(nil)

    /// Makes the next save wait, as on a slow disk, until the hold is released.
    func holdNextSave() -> SaveHold {
        let hold = SaveHold()
        nextHold.withLock { $0 = hold }
        return hold
    }

    /// Whether saves fail from now on.
    var failing: Bool {
        get { saved.withLock { $0.failing } }
        set { saved.withLock { $0.failing = newValue } }
    }

    /// The last snapshot saved.
    var snapshot: SessionSnapshot { saved.withLock { $0.snapshot } }

    func save(_ snapshot: SessionSnapshot) throws {
        nextHold.withLock { hold in
            defer { hold = nil }
            return hold
        }?.hold()
        try saved.withLock { state in
            guard !state.failing else { throw RefusedError() }
            state.snapshot = snapshot
        }
    }
}

/// A save held in flight: it blocks the saving thread (as `write` and `fsync` do) until released.
final class SaveHold: Sendable {
    private let (started, startedContinuation) = AsyncStream<Void>.makeStream()
    private let released = DispatchSemaphore(value: 0)
    private let state = Mutex((holding: false, done: false))

    /// Whether the save is still held.
    var isHolding: Bool { state.withLock { $0.holding } }

    /// Returns once the save has begun and is held.
    func untilHeld() async {
        for await _ in started { return }
    }

    /// Lets the save finish.
    func release() {
        released.signal()
    }

    fileprivate func hold() {
        state.withLock { $0.holding = true }
        startedContinuation.yield()
        // Bounded only so that a test that never releases fails instead of hanging the run.
        _ = released.wait(timeout: .now() + 60)
        state.withLock { $0.holding = false }
    }
}

/// The members of a group, as a test changes them.
final class Members: Sendable {
    private let uids: Mutex<Set<UInt32>>

    init(_ uids: Set<UInt32>) { self.uids = Mutex(uids) }

    func contains(_ uid: UInt32) -> Bool { uids.withLock { $0.contains(uid) } }

    func remove(_ uid: UInt32) { _ = uids.withLock { $0.remove(uid) } }

    func add(_ uid: UInt32) { _ = uids.withLock { $0.insert(uid) } }
}
