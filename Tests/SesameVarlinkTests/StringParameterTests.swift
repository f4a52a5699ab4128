import NIOCore
import SesameWire
import Testing

@testable import SesameVarlink

/// `stringParameter` reads a call's one string parameter without a decoder: it must give what
/// decoding into a type with that one member gives, the value or `InvalidParameter`.
@Suite struct StringParameterTests {
    private struct AccountOnly: Decodable {
        var account: String
    }

    @Test(arguments: [
        #"{"method":"a.b.C","parameters":{"account":"google-1"}}"#,
        #"{"method":"a.b.C","parameters":{"other":[1,{"account":2}],"account":"x"}}"#,
        #"{"method":"a.b.C","parameters":{"account":"x"},"more":false,"x":{"account":"not this"}}"#,
        #"{"method":"a.b.C","parameters":null,"x":{"account":"not this"}}"#,
        #"{"method":"a.b.C","parameters":{"account":"caf\u00e9 \"quoted\" \\ \ud83d\ude00"}}"#,
        #"{"method":"a.b.C","parameters":{"account":"café 😀"}}"#,
        #"{"method":"a.b.C","parameters":{"account":""}}"#,
        #"{"method":"a.b.C","parameters":{"acc\u006funt":"escaped key"}}"#,
        #"{"method":"a.b.C","parameters":{"account":1}}"#,
        #"{"method":"a.b.C","parameters":{"account":null}}"#,
        #"{"method":"a.b.C","parameters":{"account":["x"]}}"#,
        #"{"method":"a.b.C","parameters":{"account":{"id":"x"}}}"#,
        #"{"method":"a.b.C","parameters":{"Account":"x"}}"#,
        #"{"method":"a.b.C","parameters":{}}"#,
        #"{"method":"a.b.C","parameters":null}"#,
        #"{"method":"a.b.C"}"#,
    ])
    func readsAsTheDecoderDoes(_ message: String) throws {
        let call = try VarlinkCall(frame: ByteBuffer(string: message))
        let decoded = Result { () throws(VarlinkError) in try call.decodeParameters(AccountOnly.self).account }
        let read = Result { () throws(VarlinkError) in try call.stringParameter("account") }
        switch (decoded, read) {
        case (.success(let expected), .success(let actual)): #expect(actual == expected)
        case (.failure(let expected), .failure(let actual)): #expect(actual == expected)
        default: Issue.record("decoded \(decoded), read \(read)")
        }
    }

    @Test func aCallBuiltInProcessIsReadFromItsMembers() throws {
        let call = VarlinkCall(method: "a.b.C", parameters: ["account": "google-1", "n": 1])
        #expect(try call.stringParameter("account") == "google-1")
        #expect(throws: VarlinkError.invalidParameter("n")) { try call.stringParameter("n") }
    }
}
