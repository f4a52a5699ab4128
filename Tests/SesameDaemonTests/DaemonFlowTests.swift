import Foundation
import SesameCore
import SesameCoreTesting
import SesameProtocol
import SesameStore
import Testing

@testable import SesameDaemon

/// Whole flows through sesamed as it is put together (`DaemonHarness`): what a program and a
/// person do over its interfaces, with the encrypted store on disk and the test clock.
@Suite(.timeLimit(.minutes(1))) struct DaemonFlowTests {
    /// Import, a token, a refresh on demand once it expired, the events of each, a logout that
    /// revokes at the provider; a second daemon cannot open the store the first holds, and after
    /// a restart the account is as the logout left it.
    @Test func importTokenRefreshEventsLogoutAndRestart() async throws {
        let clock = TestClock()
        let (directory, account) = try await {
            let harness = try DaemonHarness(clock: clock)
            let account = try await importTokenRefreshAndLogOut(harness)
            #expect {
                _ = try DaemonHarness(directory: harness.directory, clock: clock)
            } throws: { error in
                if case .inUse = error as? StoreError { true } else { false }
            }
            return (harness.directory, account)
        }()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let restarted = try DaemonHarness(directory: directory, clock: clock)
        let after = try await restarted.call(AccountsContract.interface, "Get", AccountParameters(account: account))
        #expect(try after.reply(as: AccountReply.self).account.state == .loggedOut)
        let token = try await restarted.call(
            AccountsContract.interface,
            "GetToken",
            GetTokenParameters(account: account)
        )
        #expect(token.errorName == "io.sesame.Accounts.NeedsLogin")
    }

    /// The first life of `importTokenRefreshEventsLogoutAndRestart`'s daemon; the account's id.
    private func importTokenRefreshAndLogOut(_ harness: DaemonHarness) async throws -> String {
        let (replies, subscription) = try harness.subscribe()
        var events = replies.makeAsyncIterator()
        #expect(await events.next()?.ready != nil)

        let imported = try await harness.imported(expiresIn: 120)
        #expect(await events.next()?.event?.kind == .loggedIn)
        let parameters = GetTokenParameters(account: imported.id)
        let first = try await harness.call(AccountsContract.interface, "GetToken", parameters)
        #expect(try first.reply(as: GetTokenReply.self).accessToken == "AT-1")

        harness.clock.advance(by: .seconds(180))
        let second = try await harness.call(AccountsContract.interface, "GetToken", parameters)
        #expect(try second.reply(as: GetTokenReply.self).accessToken == "AT-2")
        #expect(harness.provider.refreshCount == 1)
        #expect(await events.next()?.event?.kind == .tokenRefreshed)

        let logout = try await harness.call(
            AccountsContract.interface,
            "Logout",
            AccountParameters(account: imported.id)
        )
        #expect(try logout.reply(as: LogoutReply.self).revokedRemotely)
        #expect(harness.provider.revoked.withLock { $0.map(\.refreshToken) } == ["RT-2"])
        #expect(await events.next()?.event?.kind == .loggedOut)
        subscription.cancel()
        _ = await subscription.result
        return imported.id
    }

    /// One user's account is another's to neither read nor log out, through the same interfaces.
    @Test func anotherUserCanNeitherTakeTheTokenNorLogTheAccountOut() async throws {
        let harness = try DaemonHarness()
        defer { harness.remove() }
        let imported = try await harness.imported(as: 1000)
        let parameters = AccountParameters(account: imported.id)
        let taken = try await harness.call(
            AccountsContract.interface,
            "GetToken",
            GetTokenParameters(account: imported.id),
            as: 1001
        )
        #expect(taken.errorName == "io.sesame.Accounts.NoSuchAccount")
        let loggedOut = try await harness.call(AccountsContract.interface, "Logout", parameters, as: 1001)
        #expect(loggedOut.errorName == "io.sesame.Accounts.NoSuchAccount")
        let own = try await harness.call(AccountsContract.interface, "Get", parameters, as: 1000)
        #expect(try own.reply(as: AccountReply.self).account.state == .active)
        #expect(harness.provider.revoked.withLock { $0.isEmpty })
    }
}
