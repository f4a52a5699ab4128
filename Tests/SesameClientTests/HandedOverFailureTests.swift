import Glibc
import SesameClient
import SesameCore
import SesameOneShot
import Testing

/// What sesamectl's token shortcut hands sesamectl-commands when its GetToken failed: it survives
/// the trip through the environment, and reads back as the error the same call would have thrown.
@Suite struct HandedOverFailureTests {
    static let noSuchAccount = #"{"error":"io.sesame.Accounts.NoSuchAccount","parameters":{"account":"no body"}}"#

    @Test func everyFailureSurvivesTheEnvironmentsText() {
        let failures: [HandedOverFailure] = [
            .reply(Self.noSuchAccount), .noReply(.cannotConnect(ConnectFailure(code: ENOENT, step: "connect"))),
            .noReply(.connectionClosed), .noReply(.replyTooLarge(limit: 1024)),
        ]
        for failure in failures {
            #expect(HandedOverFailure(encoded: failure.encoded) == failure)
        }
        for nonsense in ["", "reply", "connect x connect", "too-large", "closed now"] {
            #expect(HandedOverFailure(encoded: nonsense) == nil, "\(nonsense)")
        }
    }

    @Test func aHandedOverFailureIsTheErrorTheCallWouldHaveThrown() {
        let missing = "/nonexistent/sesame/io.sesame"
        let thrown = #expect(throws: SesameError.self) {
            _ = try SesameClient.oneShotAccessToken(for: "a", socketPath: missing)
        }
        let handed = HandedOverFailure.noReply(.cannotConnect(ConnectFailure(code: ENOENT, step: "connect")))
        #expect(SesameClient.oneShotAccessTokenError(handed, socketPath: missing) == thrown)
        #expect(SesameClient.oneShotAccessTokenError(.reply(Self.noSuchAccount)) == .session(.noSuchAccount("no body")))
    }

    @Test func takingTheFailureTakesItOutOfTheEnvironment() {
        HandedOverFailure.pass(.noReply(.connectionClosed))
        #expect(HandedOverFailure.take() == .noReply(.connectionClosed))
        #expect(getenv(HandedOverFailure.variable) == nil)
        #expect(HandedOverFailure.take() == nil)
    }
}
