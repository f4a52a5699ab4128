import SesameOneShot
import SesameProtocol
import SesameVarlink
import Testing

/// `sesamectl token`'s GetToken without a JSON decoder: the call it writes is the wire
/// encoder's byte for byte, and a reply is read as a token only when it is one, exactly.
@Suite struct GetTokenWireTests {
    @Test func theMethodIsTheContracts() {
        #expect(GetTokenWire.getToken == AccountsContract.getToken.qualifiedName)
    }

    /// Every character an account may hold goes out as the wire encoder writes it, and every one
    /// the encoder would escape is left to sesamectl-commands instead.
    @Test func theCallIsWhatTheWireEncoderWrites() throws {
        let scalars = (0...0x7F).compactMap(Unicode.Scalar.init) + ["\u{80}", "\u{2028}", "\u{2029}", "\u{FFFD}", "😀"]
        for account in scalars.map({ "a\($0)b" }) + ["google-b3c8b075", "work", "Ünï cödé"] {
            let encoded = try CallEnvelope(method: GetTokenWire.getToken, parameters: ["account": account]).frame()
            if GetTokenWire.fitsUnescaped(account) {
                #expect(GetTokenWire.frame(account: account) == encoded, "\(account.debugDescription)")
            } else {
                #expect(encoded.contains(UInt8(ascii: "\\")), "\(account.debugDescription)")
            }
        }
    }

    @Test func onlyAnAccountThatNeedsNoEscapeGoesIntoTheCallAsItIs() {
        #expect(GetTokenWire.fitsUnescaped("google-b3c8b075"))
        #expect(GetTokenWire.fitsUnescaped("Ünï cödé/1"))
        for account in [#"a"b"#, #"a\b"#, "a\nb", "a\u{1}b", "\t"] {
            #expect(!GetTokenWire.fitsUnescaped(account))
        }
    }

    @Test func aTokenIsReadFromTheParameters() {
        let replies: [(String, String)] = [
            (#"{"parameters":{"accessToken":"tok/en+=","expiresAt":"2026-11-28T21:45:30Z"}}"#, "tok/en+="),
            (#" { "parameters" : { "expiresIn" : 5, "accessToken" : "é✓" } } "#, "é✓"),
            (#"{"parameters":{"accessToken":""}}"#, ""),
            (#"{"p\u0061rameters":{"acc\u0065ssToken":"t"}}"#, "t"),
        ]
        for (reply, token) in replies {
            #expect(GetTokenWire.reply(Array(reply.utf8)) == .token(token))
        }
    }

    @Test func anErrorReplyIsNeverReadAsAToken() {
        let replies = [
            #"{"error":"io.sesame.Accounts.NoSuchAccount","parameters":{"account":"x"}}"#,
            #"{"parameters":{"accessToken":"looks like one"},"error":"io.sesame.Accounts.NeedsLogin"}"#,
            #"{"\u0065rror":"io.sesame.Accounts.NeedsLogin","parameters":{"accessToken":"t"}}"#,
        ]
        for reply in replies {
            #expect(GetTokenWire.reply(Array(reply.utf8)) == .error)
        }
    }

    /// Anything but a plain token or a plain error is left to sesamectl-commands, which decodes
    /// it in full; nothing is guessed at.
    @Test func whatIsNotReadExactlyIsLeftUnread() {
        let replies = [
            #"{"parameters":{"accessToken":"a\/b"}}"#,  // an escape in the token
            #"{"parameters":{"accessToken":42}}"#,
            #"{"parameters":{"token":"x"}}"#,
            #"{"parameters":{"inner":{"accessToken":"x"}}}"#,
            #"{"accessToken":"x"}"#,
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
            #expect(GetTokenWire.reply(Array(reply.utf8)) == .unread, "\(reply)")
        }
        #expect(GetTokenWire.reply([0xFF, 0xFE]) == .unread)
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(GetTokenWire.reply(Array(#"{"parameters":{"accessToken":"x","deep":\#(deep)}}"#.utf8)) == .unread)
    }
}
