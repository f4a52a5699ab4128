import Foundation
import Logging
import NIOCore
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Testing

@testable import SesameDaemon

@Suite struct TokenRepliesTests {
    private static let expiry = Date(timeIntervalSince1970: 1_800_003_600)

    private func address(_ reply: ByteBuffer) -> Int {
        reply.withUnsafeReadableBytes { Int(bitPattern: $0.baseAddress) }
    }

    /// The same tokens get the same framed buffer; new tokens never get the old reply.
    @Test func handsOutOneFrameForTheSameTokensAndANewOneForNewTokens() throws {
        let replies = TokenReplies()
        let first = TokenSet(accessToken: "AT-1", accessTokenExpiresAt: Self.expiry)
        let once = try replies.reply(for: "google-1", tokens: first).reply.frame(continues: false)
        let again = try replies.reply(for: "google-1", tokens: first).reply.frame(continues: false)
        #expect(address(once) == address(again))
        let decoded = try replies.reply(for: "google-1", tokens: first).reply.decode(GetTokenReply.self)
        #expect(decoded == GetTokenReply(accessToken: "AT-1", tokenType: "Bearer", expiresAt: Self.expiry))

        let renewed = TokenSet(accessToken: "AT-2", accessTokenExpiresAt: Self.expiry.addingTimeInterval(3600))
        let fresh = try replies.reply(for: "google-1", tokens: renewed).reply.decode(GetTokenReply.self)
        #expect(fresh.accessToken == "AT-2")
        #expect(fresh.expiresAt == Self.expiry.addingTimeInterval(3600))
    }

    /// Logout and remove drop the entry; the entries stay bounded however many accounts ask.
    @Test func forgetsAndStaysBounded() throws {
        let replies = TokenReplies()
        let tokens = TokenSet(accessToken: "AT")
        _ = try replies.reply(for: "google-1", tokens: tokens)
        replies.forget("google-1")
        #expect(replies.count == 0)
        for number in 0..<(TokenReplies.limit + 10) {
            _ = try replies.reply(for: "google-\(number)", tokens: tokens)
        }
        #expect(replies.count <= TokenReplies.limit)
    }
}

/// What is answered on a connection's event loop: only the calls that read the published view.
@Suite struct AnswerAtOnceTests {
    private let context = VarlinkCallContext(
        peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000),
        logger: Logger(label: "test"),
        streaming: false
    ) { _ in }

    private func call(_ method: any VarlinkMethodDescription, account: String) -> VarlinkCall {
        VarlinkCall(
            method: method.qualifiedName,
            parameters: ["account": .string(account)]
        )
    }

    @Test func onlyListGetAndAValidTokenAreAnsweredAtOnce() async throws {
        let fixture = HandlerFixture()
        let valid = try await fixture.imported(subject: "alice", expiresIn: 3600)
        let due = try await fixture.imported(subject: "bob", expiresIn: 10)
        let wrapped = CallerAttributedInterface(wrapped: fixture.accounts)
        for method in AccountsContract.methods {
            let expected = ["List", "Get", "GetToken"].contains(method.name)
            let call = call(method, account: valid.id)
            #expect((try fixture.accounts.methods.answerAtOnce(call, context: context) != nil) == expected, "\(method)")
            #expect((try wrapped.methods.answerAtOnce(call, context: context) != nil) == expected, "wrapped \(method)")
        }
        // A token that must be refreshed first goes to the engine, off the loop.
        #expect(
            try fixture.accounts.methods.answerAtOnce(
                call(AccountsContract.getToken, account: due.id),
                context: context
            ) == nil
        )
        // Access is checked on the spot: an account the caller may not see does not exist.
        #expect(throws: SessionError.noSuchAccount("nobody-1")) {
            try fixture.accounts.methods.answerAtOnce(
                call(AccountsContract.getToken, account: "nobody-1"),
                context: context
            )
        }
        let stranger = VarlinkCallContext(
            peer: PeerCredentials(pid: 2, uid: 2000, gid: 2000),
            logger: Logger(label: "test"),
            streaming: false
        ) { _ in }
        #expect(throws: SessionError.noSuchAccount(valid.id)) {
            try fixture.accounts.methods.answerAtOnce(
                call(AccountsContract.getToken, account: valid.id),
                context: stranger
            )
        }
    }
}
