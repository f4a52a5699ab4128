import Foundation
import NIOCore
import SesameCore
import SesameCoreTesting
import Synchronization
import Testing

/// A refresher the tests script: it counts calls and answers with what the test queued.
final class ScriptedRefresher: TokenRefresher {
    private let state = Mutex<(calls: Int, outcome: Result<TokenSet, RefreshError>)>(
        (0, .failure(.unavailable))
    )
    /// Resumed to let a refresh in flight finish, so tests can pile callers onto it first.
    let gate: AsyncStream<Void>
    private let gateContinuation: AsyncStream<Void>.Continuation
    private let gated: Bool

    init(gated: Bool = false) {
        (gate, gateContinuation) = AsyncStream.makeStream()
        self.gated = gated
    }

    var calls: Int { state.withLock { $0.calls } }

    func answer(_ outcome: Result<TokenSet, RefreshError>) {
        state.withLock { $0.outcome = outcome }
    }

    func open() {
        gateContinuation.yield()
    }

    func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        let outcome = state.withLock { state in
            state.calls += 1
            return state.outcome
        }
        if gated {
            for await _ in gate { break }
        }
        return try outcome.get()
    }

    private let revocations = Mutex<(revoked: [TokenSet], failure: RevocationError?)>(([], nil))

    /// The grants revoked so far.
    var revoked: [TokenSet] { revocations.withLock { $0.revoked } }

    /// Makes the next revocations fail with `failure`, or succeed with nil.
    func failRevocations(with failure: RevocationError?) {
        revocations.withLock { $0.failure = failure }
    }

    func revoke(_ account: Account, grant: TokenSet) async throws(RevocationError) {
        let failure = revocations.withLock { state -> RevocationError? in
            if state.failure == nil { state.revoked.append(grant) }
            return state.failure
        }
        if let failure { throw failure }
    }

    private let exchangeState = Mutex<
        (asked: [(subject: String, narrowing: TokenNarrowing)], outcome: Result<TokenSet, NarrowingError>)
    >(
        ([], .failure(.unsupported(reason: "none scripted")))
    )

    /// The exchanges asked for: the access token given and what was asked.
    var exchanges: [(subject: String, narrowing: TokenNarrowing)] { exchangeState.withLock { $0.asked } }

    func answerExchange(_ outcome: Result<TokenSet, NarrowingError>) {
        exchangeState.withLock { $0.outcome = outcome }
    }

    func exchange(_ account: Account, accessToken: String, for narrowing: TokenNarrowing)
        async throws(NarrowingError) -> TokenSet
    {
        let outcome = exchangeState.withLock { state in
            state.asked.append((accessToken, narrowing))
            return state.outcome
        }
        if gated {
            for await _ in gate { break }
        }
        return try outcome.get()
    }
}

/// A persistence whose saves can be made to fail, and that, like the store, writes only the
/// changes it is handed: what the engine changed but did not hand over is not saved.
final class FlakyPersistence: SessionPersistence {
    private let state = Mutex<(failing: Bool, saved: SessionSnapshot?)>((false, nil))

    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    var saved: SessionSnapshot? { state.withLock { $0.saved } }

    struct DiskFullError: Error {}

    func save(_ snapshot: SessionSnapshot) throws {
        try state.withLock { state in
            if state.failing { throw DiskFullError() }
            state.saved = snapshot
        }
    }

    func save(_ snapshot: SessionSnapshot, changes: [String: StoredAccount?]) throws {
        try state.withLock { state in
            if state.failing { throw DiskFullError() }
            guard let saved = state.saved else {
                state.saved = snapshot
                return
            }
            var accounts = Dictionary(saved.accounts.map { ($0.account.id, $0) }) { _, last in last }
            for (id, change) in changes { accounts[id] = change }
            state.saved = SessionSnapshot(accounts: Array(accounts.values), lastSequence: snapshot.lastSequence)
        }
    }
}

/// An engine on a test clock whose subscribers receive the events themselves.
struct EngineFixture {
    let clock = TestClock()
    let persistence = FlakyPersistence()
    let refresher: ScriptedRefresher
    let engine: SessionEngine<AuthEvent>

    init(
        snapshot: SessionSnapshot = SessionSnapshot(),
        loop: any EventLoop = testEngineLoop,
        refresher: ScriptedRefresher = ScriptedRefresher(),
        policy: SessionPolicy = SessionPolicy(
            expiringMargin: .seconds(60),
            refreshMargin: .seconds(30),
            refreshAhead: false
        )
    ) {
        self.refresher = refresher
        engine = SessionEngine(
            snapshot: snapshot,
            clock: clock,
            runningOn: loop,
            persistence: persistence,
            refresher: refresher,
            policy: policy,
            encode: { $0 }
        )
    }

    /// The engine a restart would start: on what this one saved.
    func restarted() throws -> EngineFixture {
        EngineFixture(snapshot: try #require(persistence.saved))
    }

    func tokens(lifetime: Duration, refresh: String? = "RT-1", access: String = "AT-1") -> TokenSet {
        TokenSet(
            accessToken: access,
            refreshToken: refresh,
            accessTokenExpiresAt: clock.now.addingTimeInterval(lifetime.timeInterval),
            scopes: ["openid"]
        )
    }

    func importAccount(lifetime: Duration = .seconds(3600), refresh: String? = "RT-1") async throws -> Account {
        try await engine.importSession(
            ImportedSession(
                provider: "google",
                subject: "alice",
                owner: 1000,
                tokens: tokens(lifetime: lifetime, refresh: refresh)
            )
        )
    }

    /// Lets the deadline loop look at the last change: changes are looked at once a second at
    /// most, so it waits out that second, and this moves the clock past it and waits until the
    /// loop sleeps again.
    func lookAtTheChange() async throws {
        try #require(await yieldUntil { clock.sleepsLeft == [.seconds(1)] })
        clock.advance(by: .seconds(1))
        try #require(await yieldUntil { clock.sleeperCount == 1 && clock.sleepsLeft != [.seconds(1)] })
    }

    func subscribe(_ filter: EventFilter = EventFilter()) async -> Subscription<AuthEvent> {
        await engine.subscribe(filter: filter, since: nil).subscription
    }
}

extension Subscription where Payload == AuthEvent {
    /// The kinds of the next `count` events.
    func kinds(_ count: Int) async throws -> [AuthEvent.Kind] {
        var kinds: [AuthEvent.Kind] = []
        for _ in 0..<count {
            guard let event = try await next() else { break }
            kinds.append(event.kind)
        }
        return kinds
    }
}
