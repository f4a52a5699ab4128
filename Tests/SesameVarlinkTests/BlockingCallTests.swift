import SesameVarlink
import SesameWire
import Testing

/// The wire's blocking call without a JSON decoder: the call it writes is the wire encoder's
/// byte for byte, and a reply's error and string parameters are read only where they are
/// exactly that (`ScannedReply`).
@Suite struct BlockingCallTests {
    /// Every character an account may hold, the escaped ones too, goes out as JSONEncoder
    /// writes it with the wire's settings.
    @Test func theCallIsWhatTheWireEncoderWrites() throws {
        let scalars = (0...0x7F).compactMap(Unicode.Scalar.init) + ["\u{80}", "\u{2028}", "\u{2029}", "\u{FFFD}", "😀"]
        for account in scalars.map({ "a\($0)b" }) + ["google-b3c8b075", "work", "Ünï cödé/1", ""] {
            let method = "io.sesame.Accounts.GetToken"
            let encoded = try CallEnvelope(method: method, parameters: ["account": account]).frame()
            let written = BlockingCall.frame(method, parameters: ["account": .string(account)])
            #expect(written == encoded, "\(account.debugDescription)")
        }
    }

    /// Every kind of value, keys sorted as the encoder sorts them.
    @Test func everyValueIsWrittenAsTheEncoderWritesIt() throws {
        let doubles: [Double] = [
            0.5, 1e-7, 1.0, 0.0, -0.0, 1e15, 1e16, -2.5e300, .leastNonzeroMagnitude, .infinity.nextDown,
        ]
        let value: JSONValue = [
            "zeta": [1, -2, .int(.min), .int(.max), true, false, .null, "x\u{7F}"],
            "doubles": .array(doubles.map(JSONValue.double)),
            "alpha": ["nested": ["b": 2, "a": 1, "B": 3, "_": 4]],
            "Émile": "a/b\"c\\d",
        ]
        #expect(value.compactText == String(decoding: try JSONCoding.encode(value), as: UTF8.self))
        #expect(JSONValue.double(.infinity).compactText == "null")
    }

    /// A call without parameters has no `parameters` member, as the encoder leaves it out.
    @Test func aCallWithoutParametersIsWhatTheWireEncoderWrites() throws {
        let method = "org.varlink.service.GetInfo"
        let encoded = try CallEnvelope<JSONValue>(method: method, parameters: nil).frame()
        #expect(BlockingCall.frame(method, parameters: [:]) == encoded)
    }

    @Test func aStringParameterIsReadFromTheParameters() throws {
        let replies: [(String, String)] = [
            (#"{"parameters":{"accessToken":"tok/en+=","expiresAt":"2026-11-28T21:45:30Z"}}"#, "tok/en+="),
            (#" { "parameters" : { "expiresIn" : 5, "accessToken" : "é✓" } } "#, "é✓"),
            (#"{"parameters":{"accessToken":""}}"#, ""),
            (#"{"p\u0061rameters":{"acc\u0065ssToken":"t"}}"#, "t"),
        ]
        for (text, token) in replies {
            let reply = try #require(ScannedReply(Array(text.utf8)))
            #expect(reply.error == nil)
            #expect(reply.stringParameter("accessToken") == token)
        }
    }

    @Test func anErrorReplyIsReadAsAnError() throws {
        let replies = [
            #"{"error":"io.sesame.Accounts.NoSuchAccount","parameters":{"account":"x"}}"#,
            #"{"parameters":{"accessToken":"looks like one"},"error":"io.sesame.Accounts.NeedsLogin"}"#,
            #"{"\u0065rror":"io.sesame.Accounts.NeedsLogin","parameters":{"accessToken":"t"}}"#,
        ]
        for text in replies {
            let reply = try #require(ScannedReply(Array(text.utf8)))
            #expect(reply.error?.hasPrefix("io.sesame.Accounts.") == true)
        }
    }

    /// A string that is escaped, or anything else in its place, is not read: a program that
    /// links a decoder reads it (sesamectl leaves such a reply to sesamectl-commands).
    @Test func whatIsNotAPlainStringIsNotReadAsOne() throws {
        let replies = [
            #"{"parameters":{"accessToken":"a\/b"}}"#,
            #"{"parameters":{"accessToken":42}}"#,
            #"{"parameters":{"token":"x"}}"#,
            #"{"parameters":{"inner":{"accessToken":"x"}}}"#,
            #"{"accessToken":"x"}"#,
            #"{"parameters":{}}"#,
            #"{}"#,
            #"{"parameters":"accessToken"}"#,
        ]
        for text in replies {
            let reply = try #require(ScannedReply(Array(text.utf8)), "\(text)")
            #expect(reply.stringParameter("accessToken") == nil, "\(text)")
        }
    }

    /// What the scan refuses is no reply at all, and an error that is not a plain string is
    /// not taken for a success.
    @Test func whatTheScanRefusesIsNoReply() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        let replies = [
            #"{"parameters":{"accessToken":"x","accessToken":"y"}}"#,  // a name given twice
            #"{"parameters":{"accessToken":"x"}} trailing"#,
            #"{"parameters":{"accessToken":"x"}"#,
            #"["parameters"]"#,
            #"{"error":42}"#,
            #"{"error":null,"parameters":{"accessToken":"x"}}"#,
            #"{"error":"a\u0041","parameters":{"accessToken":"x"}}"#,
            #"{"parameters":{"accessToken":"x","deep":\#(deep)}}"#,
            "",
        ]
        for text in replies {
            #expect(ScannedReply(Array(text.utf8)) == nil, "\(text)")
        }
        #expect(ScannedReply([0xFF, 0xFE]) == nil)
    }
}
