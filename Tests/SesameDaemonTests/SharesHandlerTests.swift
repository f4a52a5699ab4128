import Foundation
import Logging
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameVarlinkTesting
import SesameWire
import Testing

@testable import SesameDaemon

/// io.sesame.Shares in-process: a share opened, joined and ended, and what a joined connection
/// may do (only the consumer methods, only the shared accounts, only while the share is open).
@Suite struct SharesHandlerTests {
    /// A share being opened as `uid`: its first reply, and the task holding the call open.
    private struct OpenedShare {
        let info: ShareInfo
        let replies: AsyncStream<OpenShareReply>
        let call: Task<VarlinkReply, any Error>
    }

    private func open(
        _ accounts: [String],
        expiresIn: Int? = nil,
        idToken: Bool = false,
        on shares: SharesInterface,
        as uid: UInt32 = 1000
    ) async throws -> OpenedShare {
        let (replies, continuation) = AsyncStream<OpenShareReply>.makeStream()
        let context = VarlinkCallContext(
            peer: PeerCredentials(pid: 1, uid: uid, gid: uid),
            logger: Logger(label: "test"),
            streaming: true
        ) { reply in continuation.yield(try reply.decode(OpenShareReply.self)) }
        let parameters = try JSONValue(
            encoding: OpenShareParameters(accounts: accounts, expiresIn: expiresIn, idToken: idToken)
        )
        let call = VarlinkCall(method: "io.sesame.Shares.Open", parameters: parameters.objectValue ?? [:], more: true)
        let task = Task { try await shares.methods.answer(call, context: context) }
        let info = try #require(await replies.first { _ in true }?.share)
        return OpenedShare(info: info, replies: replies, call: task)
    }

    private func interface(_ fixture: HandlerFixture) -> SharesInterface {
        SharesInterface(interfaceDescription: "", engine: fixture.engine, trust: fixture.trust, shares: Shares())
    }

    /// A connection (its calls share one scope) that joined `share` as `uid`.
    private func joined(_ share: ShareInfo, _ shares: SharesInterface, as uid: UInt32 = 1000) async throws
        -> InProcessCall
    {
        let connection = InProcessCall(uid: uid)
        let reply = try await connection.call(shares, "Join", JoinShareParameters(share: share.id, consumerUid: 4242))
        #expect(try reply.reply(as: JoinShareReply.self).accounts == share.accounts)
        return connection
    }

    @Test func aJoinedConnectionGetsTheSharedTokenAndNothingElse() async throws {
        let fixture = HandlerFixture()
        let shared = try await fixture.imported(subject: "alice")
        let other = try await fixture.imported(subject: "bob")
        let shares = interface(fixture)
        let share = try await open([shared.id], on: shares)
        defer { share.call.cancel() }
        let connection = try await joined(share.info, shares)

        let token = try await connection.call(fixture.accounts, "GetToken", AccountParameters(account: shared.id))
        #expect(try token.reply(as: GetTokenReply.self).accessToken == "AT-alice")
        let list = try await connection.call(fixture.accounts, "List").reply(as: ListReply.self)
        #expect(list.accounts.map(\.id) == [shared.id])
        for method in ["Get", "GetToken"] {
            let hidden = try await connection.call(fixture.accounts, method, AccountParameters(account: other.id))
            #expect(hidden.errorName == "io.sesame.Accounts.NoSuchAccount")
        }
        for method in ["Logout", "Refresh", "Remove", "Check", "GetIDToken"] {
            let refused = try await connection.call(fixture.accounts, method, AccountParameters(account: shared.id))
            #expect(refused.errorName == "io.sesame.Shares.NotShared", "\(method)")
        }
        let again = try await connection.call(shares, "Join", JoinShareParameters(share: share.info.id))
        #expect(again.errorName == "io.sesame.Shares.NotShared")
        // The owner's own connections are not limited by the share.
        let own = try await fixture.accounts(AccountsContract.get, AccountParameters(account: other.id))
        #expect(own.errorName == nil)
    }

    @Test func aShareOpenedWithIDTokensPassesGetIDTokenOn() async throws {
        let fixture = HandlerFixture()
        let shared = try await fixture.imported()
        let shares = interface(fixture)
        let share = try await open([shared.id], idToken: true, on: shares)
        defer { share.call.cancel() }
        let connection = try await joined(share.info, shares)
        // Passed on to the account, which has none to give: not refused by the share.
        let reply = try await connection.call(fixture.accounts, "GetIDToken", AccountParameters(account: shared.id))
        #expect(reply.errorName == "io.sesame.Accounts.NoIDToken")
    }

    @Test func onlyTheSharesOwnerMayJoinIt() async throws {
        let fixture = HandlerFixture()
        let shared = try await fixture.imported()
        let shares = interface(fixture)
        let share = try await open([shared.id], on: shares)
        defer { share.call.cancel() }
        let stranger = try await InProcessCall(uid: 1001).call(
            shares,
            "Join",
            JoinShareParameters(share: share.info.id)
        )
        #expect(stranger.errorName == "io.sesame.Shares.ShareEnded")
        // Nor may anyone share an account they may not use.
        let taken = try await InProcessCall(uid: 1001).call(
            shares,
            "Open",
            OpenShareParameters(accounts: [shared.id]),
            more: true
        )
        #expect(taken.errorName == "io.sesame.Accounts.NoSuchAccount")
        // Nor may a share's socket, which is logged, carry a line of its own.
        let forged = try await InProcessCall(uid: 1000).call(
            shares,
            "Open",
            OpenShareParameters(accounts: [shared.id], socket: "/tmp/s\ninfo sesamed: share ended"),
            more: true
        )
        #expect(forged.errorName == VarlinkError.invalidParameter("socket").name)
    }

    @Test func theShareEndsWhenItsTimeRunsOutAndItsConnectionsAreRefusedThen() async throws {
        let fixture = HandlerFixture()
        let shared = try await fixture.imported()
        let shares = interface(fixture)
        let share = try await open([shared.id], expiresIn: 60, on: shares)
        let connection = try await joined(share.info, shares)
        #expect(await fixture.clock.untilSleeping())
        fixture.clock.advance(by: .seconds(59))
        #expect(await fixture.clock.untilSleeping())
        let before = try await connection.call(fixture.accounts, "Get", AccountParameters(account: shared.id))
        #expect(before.errorName == nil)
        fixture.clock.advance(by: .seconds(1))
        let last = try await share.call.value.decode(OpenShareReply.self)
        #expect(last.ended == "its time ran out")
        let after = try await connection.call(fixture.accounts, "GetToken", AccountParameters(account: shared.id))
        #expect(after.errorName == "io.sesame.Shares.ShareEnded")
    }

    @Test func theShareEndsWhenASharedAccountIsLoggedOut() async throws {
        let fixture = HandlerFixture()
        let shared = try await fixture.imported()
        let shares = interface(fixture)
        let share = try await open([shared.id], on: shares)
        _ = try await fixture.accounts(AccountsContract.logout, AccountParameters(account: shared.id))
        let last = try await share.call.value.decode(OpenShareReply.self)
        #expect(last.ended == "account \(shared.id) was logged out")
    }

    @Test func aUserMayHoldOnlySoManyShares() async throws {
        let fixture = HandlerFixture()
        let shared = try await fixture.imported()
        let shares = interface(fixture)
        var open: [OpenedShare] = []
        defer { open.forEach { $0.call.cancel() } }
        for _ in 0..<Shares.perUser { open.append(try await self.open([shared.id], on: shares)) }
        let refused = try await InProcessCall(uid: 1000).call(
            shares,
            "Open",
            OpenShareParameters(accounts: [shared.id]),
            more: true
        )
        #expect(refused.errorName == "io.sesame.Shares.TooManyShares")
    }
}
