import Foundation
import NIOCore
import SesameWire
import Testing

@testable import SesameVarlink

/// The envelope is read from the shape check's pass over the bytes, not by a JSON decoder: it
/// must refuse whatever is not JSON (RFC 8259) and read a call exactly as Foundation reads it.
@Suite struct EnvelopeReadingTests {
    private func call(_ text: String) throws(VarlinkProtocolError) -> VarlinkCall {
        try VarlinkCall(frame: ByteBuffer(string: text))
    }

    @Test(arguments: [
        #"{"method":"a.b.C",}"#,
        #"{"method":"a.b.C","parameters":{"n":01}}"#,
        #"{"method":"a.b.C","parameters":{"n":1.}}"#,
        #"{"method":"a.b.C","parameters":{"n":-}}"#,
        #"{"method":"a.b.C","parameters":{"n":1e}}"#,
        #"{"method":"a.b.C","parameters":{"n":+1}}"#,
        #"{"method":"a.b.C","parameters":{"s":"\x"}}"#,
        #"{"method":"a.b.C","parameters":{"s":"\u12G4"}}"#,
        #"{"method":"a.b.C","parameters":{"s":"\ud800"}}"#,
        #"{"method":"a.b.C","parameters":{"s":"\udc00\ud800"}}"#,
        #"{"method":"a.b.C","parameters":{"s":"\ud800\u0041"}}"#,
        #"{"method":"a.b.C","x":1e400}"#,
        #"{"method":"a.b.C","x":-123456789e99999}"#,
        "{\"method\":\"a.b.C\",\"parameters\":{\"s\":\"a\tb\"}}",
        #"{"method":"a.b.C","x":[1,]}"#,
        #"{"method":"a.b.C","x":tru}"#,
        #"{"method":"a.b.C","x":nul}"#,
        #"{"method":"a.b.C","x":NaN}"#,
        #"{"method":"a.b.C""#,
        #"{"method":"a.b.C"} {}"#,
        #"{"method" "a.b.C"}"#,
        #"{method:"a.b.C"}"#,
        #"{'method':'a.b.C'}"#,
        "\u{FEFF}{\"method\":\"a.b.C\"}",
        "",
        "   ",
    ])
    func whatIsNotJSONIsRefused(_ text: String) {
        // Stricter than Foundation, which takes trailing commas (RFC 8259 §4 and §5 do not).
        #expect(throws: VarlinkProtocolError.self, "\(text)") { try call(text) }
    }

    @Test func bytesThatAreNotUTF8AreRefused() {
        var frame = ByteBuffer(string: #"{"method":"a.b.C","parameters":{"s":""#)
        frame.writeBytes([0xC3, 0x28])
        frame.writeString(#""}}"#)
        #expect(throws: VarlinkProtocolError.invalidMessage("not a Varlink call: malformed JSON (not UTF-8 at byte 0)"))
        {
            try VarlinkCall(frame: frame)
        }
    }

    @Test func readsWhatFoundationReads() throws {
        let text =
            " \r\n\t{ \"oneway\" : false , \"x\" : [ {}, [], \"\\u00e9\\n\", -0.5e+3, 1E2, true, null ] , "
            + #""method" : "a.b.\u0043all", "more": true, "parameters" : { "account" : "g\u00e9-1\ud83d\ude00" }, "#
            + #""n": [1e308, 123456789012345678901234567890, 1.0e-400] } "#
        let parsed = try call(text)
        #expect(parsed.method == "a.b.Call")
        #expect(parsed.more && !parsed.oneway)
        struct Account: Decodable { var account: String }
        #expect(try parsed.decodeParameters(Account.self).account == "gé-1😀")
        #expect(try call(#"{"method":"a.b.C","parameters":null,"more":null}"#).parameters.isEmpty)
    }

    /// Every message a thousand random byte changes make of valid calls is read as Foundation
    /// reads it, or refused: never accepted when Foundation sees no JSON, never with another
    /// method, `more` or `oneway`.
    @Test func agreesWithFoundationOnMutatedCalls() {
        let seeds = [
            #"{"method":"io.sesame.Accounts.GetToken","parameters":{"account":"google-1"}}"#,
            #"{"method":"io.sesame.Events.Subscribe","parameters":{"since":4,"kinds":["loggedIn"]},"more":true}"#,
            #"{"oneway":true,"method":"a.b.C","parameters":{"n":-1.5e3,"o":{"a":[true,false,null]},"s":"\"\\\/"}}"#,
        ]
        var generator = SplitMix64(seed: 0x5E5A_3E)
        let alphabet = Array(#"{}[]:,"\ -+.eE0123456789tfnulraxu"#.utf8) + [0x09, 0x0A, 0x00, 0x7F, 0xC3]
        for _ in 0..<3000 {
            var bytes = Array(seeds[Int(generator.next() % UInt64(seeds.count))].utf8)
            for _ in 0...(generator.next() % 3) {
                let at = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                }
            }
            guard let parsed = try? VarlinkCall(frame: ByteBuffer(bytes: bytes)) else { continue }
            let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
            #expect(object != nil, "accepted what Foundation does not read: \(String(decoding: bytes, as: UTF8.self))")
            #expect(object?["method"] as? String == parsed.method)
            #expect((object?["more"] as? Bool ?? false) == parsed.more)
            #expect((object?["oneway"] as? Bool ?? false) == parsed.oneway)
        }
    }
}

/// A small deterministic generator, so the mutations are the same on every run.
private struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
