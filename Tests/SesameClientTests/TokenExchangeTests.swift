import SesameOneShot
import SesameVarlink
import Testing

/// `sesamectl token`'s GetToken without a JSON decoder: the call it writes is the wire
/// encoder's byte for byte, and a reply is read as a token only when it is one, exactly.
@Suite struct TokenExchangeTests {
    @Test func theCallIsWhatTheWireEncoderWrites() throws {
        for account in ["google-b3c8b075", "work", "Ünï cödé", "a/b"] {
            let encoded = try CallEnvelope(method: TokenExchange.getToken, parameters: ["account": account]).frame()
            #expect(TokenExchange.frame(account: account) == encoded)
        }
    }

    @Test func onlyAnAccountThatNeedsNoEscapeGoesIntoTheCallAsItIs() {
        #expect(TokenExchange.fitsUnescaped("google-b3c8b075"))
        #expect(TokenExchange.fitsUnescaped("Ünï cödé/1"))
        for account in [#"a"b"#, #"a\b"#, "a\nb", "a\u{1}b", "\t"] {
            #expect(!TokenExchange.fitsUnescaped(account))
        }
    }

    @Test func aTokenIsReadFromTheParameters() {
        let replies: [(String, String)] = [
            (#"{"parameters":{"accessToken":"tok/en+=","expiresAt":"2026-11-28T21:45:30Z"}}"#, "tok/en+="),
            (#" { "parameters" : { "expiresIn" : 5, "accessToken" : "é✓" } } "#, "é✓"),
            (#"{"parameters":{"accessToken":""}}"#, ""),
        ]
        for (reply, token) in replies {
            #expect(TokenExchange.reply(Array(reply.utf8)) == .token(token))
        }
    }

    @Test func anErrorReplyIsNeverReadAsAToken() {
        let replies = [
            #"{"error":"io.sesame.Accounts.NoSuchAccount","parameters":{"account":"x"}}"#,
            #"{"parameters":{"accessToken":"looks like one"},"error":"io.sesame.Accounts.NeedsLogin"}"#,
        ]
        for reply in replies {
            #expect(TokenExchange.reply(Array(reply.utf8)) == .error)
        }
    }

    /// Anything but a plain token or a plain error is left to sesamectl-commands, which decodes
    /// it in full; nothing is guessed at.
    @Test func whatIsNotReadExactlyIsLeftUnread() {
        let replies = [
            #"{"parameters":{"accessToken":"a\/b"}}"#,  // an escape in the token
            #"{"parameters":{"accessToken":42}}"#,
            #"{"parameters":{"token":"x"}}"#,
            #"{"parameters":{}}"#,
            #"{}"#,
            #"{"parameters":{"accessToken":"x","accessToken":"y"}}"#,  // a name given twice
            #"{"parameters":{"accessToken":"x"}} trailing"#,
            #"{"parameters":{"accessToken":"x"}"#,
            #"["parameters"]"#,
            #"{"error":42}"#,
            #"{"error":null,"parameters":{"accessToken":"x"}}"#,
            "",
        ]
        for reply in replies {
            #expect(TokenExchange.reply(Array(reply.utf8)) == .unread, "\(reply)")
        }
        #expect(TokenExchange.reply([0xFF, 0xFE]) == .unread)
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(TokenExchange.reply(Array(#"{"parameters":{"accessToken":"x","deep":\#(deep)}}"#.utf8)) == .unread)
    }
}
