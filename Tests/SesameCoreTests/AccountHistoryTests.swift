import Foundation
import SesameCore
import SesameCoreTesting
import Testing

/// Each account's events kept in the store: replayed to a subscriber that resumes after a
/// restart, or a resync where one is missing; and the record's last refresh, next refresh and
/// last error.
@Suite struct AccountHistoryTests {
    @Test func anEventNoLongerKeptEndsWhatCanBeReplayed() async throws {
        let fixture = EngineFixture()
        let busy = try await fixture.importAccount()
        let bob = ImportedSession(
            provider: "google",
            subject: "bob",
            owner: 1001,
            tokens: fixture.tokens(lifetime: .seconds(3600))
        )
        let quiet = try await fixture.engine.importSession(bob)
        let beforeTheBusyOnes = await fixture.engine.currentSequence
        for _ in 0...AccountHistory.limit {
            _ = try await fixture.importAccount()
        }
        let kept = try #require(fixture.persistence.saved?.accounts.first { $0.account.id == busy.id }?.history)
        #expect(kept.count == AccountHistory.limit, "each account keeps only its last events")
        let after = try fixture.restarted()
        let old = await after.engine.subscribe(filter: EventFilter(accounts: [quiet.id]), since: beforeTheBusyOnes)
        guard case .resync = old.backlog else {
            Issue.record("a since from before a dropped event must resync, got \(old.backlog)")
            return
        }
        let recent = await after.engine.subscribe(filter: EventFilter(), since: old.current - 3)
        guard case .replay(let missed) = recent.backlog else {
            Issue.record("a since among the kept events replays, got \(recent.backlog)")
            return
        }
        #expect(missed.map(\.sequence) == [old.current - 2, old.current - 1, old.current])
    }

    @Test func aRemovedAccountsEventsAreGoneSoASinceBeforeItResyncs() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount()
        let seen = await fixture.engine.currentSequence
        _ = try await fixture.engine.logout(account.id)
        try await fixture.engine.remove(account.id)
        let after = try fixture.restarted()
        let (_, backlog, _, accounts) = await after.engine.subscribe(filter: EventFilter(), since: seen)
        guard case .resync = backlog else {
            Issue.record("expected a resync, got \(backlog)")
            return
        }
        #expect(accounts.isEmpty)
    }

    @Test func theRecordSaysWhenItLastRefreshedAndWhyItLastFailed() async throws {
        let fixture = EngineFixture()
        let account = try await fixture.importAccount(lifetime: .seconds(10))
        #expect(try await fixture.engine.account(account.id).lastRefreshAt == nil)
        fixture.refresher.answer(.failure(.transient(reason: "HTTP 503", retryAfter: .seconds(30))))
        _ = try await fixture.engine.tokens(for: account.id)
        let failedAt = fixture.clock.now
        let failed = try await fixture.engine.account(account.id)
        #expect(failed.lastError?.contains("HTTP 503") == true && failed.lastErrorAt == failedAt)
        fixture.clock.advance(by: .seconds(30))
        fixture.refresher.answer(.success(fixture.tokens(lifetime: .seconds(3600), access: "AT-2")))
        _ = try await fixture.engine.refresh(account.id)
        let refreshed = try await fixture.restarted().engine.account(account.id)
        #expect(refreshed.lastRefreshAt == fixture.clock.now, "kept across a restart")
        #expect(refreshed.lastErrorAt == failedAt, "the last error stays, as history")
    }

    @Test func aRefreshTokenThatRanOutIsTheLastErrorOfTheNeededLogin() async throws {
        let fixture = EngineFixture()
        var tokens = fixture.tokens(lifetime: .seconds(3600))
        tokens.refreshTokenExpiresAt = fixture.clock.now.addingTimeInterval(600)
        let session = ImportedSession(provider: "google", subject: "alice", owner: 1000, tokens: tokens)
        let account = try await fixture.engine.importSession(session)
        fixture.clock.advance(by: .seconds(600))
        await fixture.engine.fireDueDeadlines()
        let ended = try await fixture.engine.account(account.id)
        #expect(ended.state == .needsLogin && ended.lastErrorAt == fixture.clock.now)
        #expect(ended.lastError?.hasPrefix("the refresh token ran out at ") == true)
    }

    @Test func theRecordShowsTheRefreshTheEnginePlans() async throws {
        let fixture = EngineFixture(
            policy: SessionPolicy(expiringMargin: .seconds(60), refreshMargin: .seconds(30), refreshAhead: true)
        )
        let account = try await fixture.importAccount(lifetime: .seconds(3600))
        let planned = try #require(try await fixture.engine.account(account.id).nextRefreshAt)
        #expect(planned > fixture.clock.now && planned < fixture.clock.now.addingTimeInterval(3600))
        _ = try await fixture.engine.logout(account.id)
        #expect(try await fixture.engine.account(account.id).nextRefreshAt == nil)
    }

    @Test func onlyTheUnbrokenRunEndingAtTheLastSequenceIsReplayable() {
        func stored(_ id: String, _ sequences: [UInt64]) -> StoredAccount {
            let account = Account(id: id, provider: "p", ownerUID: 1, subject: id, state: .active, createdAt: Date())
            var stored = StoredAccount(account: account, tokens: nil)
            stored.history = sequences.map { AuthEvent(sequence: $0, time: Date(), kind: .expiring, account: account) }
            return stored
        }
        let accounts = [stored("a", [1, 2, 5, 7]), stored("b", [3, 6, 8])]
        #expect(AccountHistory.replayable(in: accounts, through: 8).map(\.sequence) == [5, 6, 7, 8])
        #expect(AccountHistory.replayable(in: accounts, through: 9).isEmpty, "the last event is missing")
        #expect(AccountHistory.replayable(in: [stored("a", [0, 1])], through: 1).map(\.sequence) == [1])
    }
}
