import Foundation
import SesameCore
import SesameProtocol
import SesameVarlink
import Testing

@testable import SesameDaemon

/// One user's calls that reach a provider are limited per minute, so no user spends the
/// provider quota every user of the machine shares: the provider is not asked for the refused
/// ones, other users and root keep their own allowance, and it comes back with time.
struct ProviderCallBudgetTests {
    static let refused = "io.sesame.Accounts.TooManyProviderCalls"

    @Test func callsBeyondTheMinutesAllowanceAreRefusedBeforeTheProviderIsAsked() async throws {
        let fixture = HandlerFixture(limits: UserLimits(providerCallsPerMinute: 3))
        for subject in ["a", "b", "c"] { _ = try await fixture.imported(subject: subject) }
        let verified = fixture.provider.verificationCount
        let refusal = try await fixture.importTokens(subject: "d")
        #expect(refusal.errorName == Self.refused)
        if case .failure(let error) = refusal.result {
            #expect(error.parameters == ["limit": .int(3), "retryAfter": .int(20)])
        }
        #expect(fixture.provider.verificationCount == verified, "refused before the provider was asked")
        let account = try #require(fixture.engine.view.list().first)
        #expect(
            try await fixture.accounts(AccountsContract.refresh, AccountParameters(account: account.id)).errorName
                == Self.refused
        )
        #expect(try await fixture.importTokens(subject: "d", as: 1001).errorName == nil)
        #expect(try await fixture.importTokens(subject: "e", as: 0).errorName == nil)

        // Three a minute: one call comes back every 20 seconds.
        fixture.clock.advance(by: .seconds(20))
        #expect(try await fixture.importTokens(subject: "d").errorName == nil)
        #expect(try await fixture.importTokens(subject: "f").errorName == Self.refused)
    }

    /// Each rename is a durable write of the account: a user renaming in a loop would write
    /// without end, so renames are paid from an allowance of their own.
    @Test func renamesBeyondTheMinutesAllowanceAreRefusedAndChangeNothing() async throws {
        let fixture = HandlerFixture(limits: UserLimits(changesPerMinute: 2))
        let id = try await fixture.imported(subject: "a").id
        for name in ["one", "two"] {
            #expect(
                try await fixture.accounts(AccountsContract.rename, RenameParameters(account: id, name: name)).errorName
                    == nil
            )
        }
        let refusal = try await fixture.accounts(AccountsContract.rename, RenameParameters(account: id, name: "three"))
        #expect(refusal.errorName == "io.sesame.Accounts.TooManyChanges")
        if case .failure(let error) = refusal.result {
            #expect(error.parameters == ["limit": .int(2), "retryAfter": .int(30)])
        }
        #expect(fixture.engine.view.list().first?.name == "two", "nothing changed")
        fixture.clock.advance(by: .seconds(30))
        #expect(
            try await fixture.accounts(AccountsContract.rename, RenameParameters(account: id, name: "three")).errorName
                == nil
        )
    }
}
