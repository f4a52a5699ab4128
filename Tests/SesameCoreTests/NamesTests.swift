import Foundation
import SesameCore
import SesameCoreTesting
import Testing

/// Names owners give their accounts, and how a reference finds an account by id, by name or
/// by its provider's name, never another user's by a name.
@Suite struct NamesTests {
    private func imported(_ fixture: EngineFixture, subject: String, owner: UInt32, provider: String = "google")
        async throws -> Account
    {
        try await fixture.engine.importSession(
            ImportedSession(
                provider: provider,
                subject: subject,
                owner: owner,
                tokens: fixture.tokens(lifetime: .seconds(3600))
            )
        )
    }

    @Test func aNameIsKeptAndUniqueAmongTheOwnersAccounts() async throws {
        let fixture = EngineFixture()
        let work = try await imported(fixture, subject: "alice", owner: 1000)
        let home = try await imported(fixture, subject: "alice2", owner: 1000)
        let other = try await imported(fixture, subject: "bob", owner: 1001)
        #expect(try await fixture.engine.rename(work.id, to: "work").name == "work")
        #expect(fixture.persistence.saved?.accounts.first { $0.account.id == work.id }?.account.name == "work")
        await #expect(throws: SessionError.invalidName(name: "work", reason: "the owner's account \(work.id) has it")) {
            try await fixture.engine.rename(home.id, to: "work")
        }
        // Another owner may use the same name for its own account.
        #expect(try await fixture.engine.rename(other.id, to: "work").name == "work")
        #expect(try await fixture.engine.rename(work.id, to: nil).name == nil)
    }

    @Test(arguments: ["", "Work", "1work", "wo rk", "work/..", String(repeating: "a", count: 65)])
    func aNameOutsideTheFormIsRefused(_ name: String) async throws {
        let fixture = EngineFixture()
        let account = try await imported(fixture, subject: "alice", owner: 1000)
        await #expect(throws: SessionError.self) { try await fixture.engine.rename(account.id, to: name) }
        #expect(try await fixture.engine.account(account.id).name == nil)
    }

    @Test func aNameShapedLikeAnAccountIdIsRefusedWhetherOrNotTheIdExists() async throws {
        let fixture = EngineFixture()
        let first = try await imported(fixture, subject: "alice", owner: 1000)
        let second = try await imported(fixture, subject: "alice2", owner: 1000)
        for name in [first.id, "google-0123abcd"] {
            await #expect(
                throws: SessionError.invalidName(
                    name: name,
                    reason: "it is shaped like an account id (provider-8 hex digits)"
                )
            ) { try await fixture.engine.rename(second.id, to: name) }
        }
        #expect(try await fixture.engine.rename(second.id, to: "google-work").name == "google-work")
    }

    @Test func aReferenceFindsAnIdTheCallersOwnNameOrItsOnlyAccountOfAProvider() async throws {
        let fixture = EngineFixture()
        let mine = try await imported(fixture, subject: "alice", owner: 1000)
        let theirs = try await imported(fixture, subject: "bob", owner: 1001, provider: "kakao")
        _ = try await fixture.engine.rename(mine.id, to: "work")
        _ = try await fixture.engine.rename(theirs.id, to: "shared")
        let accounts = try await [fixture.engine.account(mine.id), fixture.engine.account(theirs.id)]
        #expect(accounts.id(of: theirs.id, caller: 1000) == theirs.id)
        #expect(accounts.id(of: "work", caller: 1000) == mine.id)
        #expect(accounts.id(of: "google", caller: 1000) == mine.id)
        // Another user's name or provider never picks their account for this caller.
        #expect(accounts.id(of: "shared", caller: 1000) == nil)
        #expect(accounts.id(of: "kakao", caller: 1000) == nil)
        #expect(accounts.id(of: "work", caller: 1001) == nil)
    }
}
