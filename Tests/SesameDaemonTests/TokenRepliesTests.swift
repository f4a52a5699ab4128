import Foundation
import NIOCore
import SesameCore
import SesameProtocol
import SesameVarlink
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
        let once = try replies.reply(for: "google-1", tokens: first).frame(continues: false)
        let again = try replies.reply(for: "google-1", tokens: first).frame(continues: false)
        #expect(address(once) == address(again))
        let decoded = try replies.reply(for: "google-1", tokens: first).decode(GetTokenReply.self)
        #expect(decoded == GetTokenReply(accessToken: "AT-1", tokenType: "Bearer", expiresAt: Self.expiry))

        let renewed = TokenSet(accessToken: "AT-2", accessTokenExpiresAt: Self.expiry.addingTimeInterval(3600))
        let fresh = try replies.reply(for: "google-1", tokens: renewed).decode(GetTokenReply.self)
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

/// What may run on a connection's event loop: only the calls that read the published view.
@Suite struct EventLoopAnswersTests {
    @Test func onlyListGetAndGetTokenAreAnsweredOnTheEventLoop() {
        let accounts = HandlerFixture().accounts
        for method in AccountsContract.Method.allCases {
            let call = VarlinkCall(method: "\(AccountsContract.interface).\(method.rawValue)")
            let expected = [.list, .get, .getToken].contains(method)
            #expect(accounts.answersOnEventLoop(call) == expected, "\(method)")
            #expect(
                CallerAttributedInterface(wrapped: accounts).answersOnEventLoop(call) == expected,
                "wrapped \(method)"
            )
        }
    }
}
