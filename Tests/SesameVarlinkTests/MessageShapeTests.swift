import NIOCore
import SesameWire
import Testing

@testable import SesameVarlink

/// The shape a call must have before it is decoded: no key twice in one object (a proxy and
/// sesamed must read the same call), and nesting within `VarlinkCall.maximumNesting`.
@Suite struct MessageShapeTests {
    private func call(_ text: String) throws(VarlinkProtocolError) -> VarlinkCall {
        try VarlinkCall(frame: ByteBuffer(string: text))
    }

    private func refusal(_ text: String) -> String? {
        do throws(VarlinkProtocolError) {
            _ = try call(text)
            return nil
        } catch {
            guard case .invalidMessage(let reason) = error else { return "\(error)" }
            return reason
        }
    }

    @Test(arguments: [
        #"{"method":"io.sesame.Admin.Stats","method":"io.sesame.Accounts.List"}"#,
        #"{"method":"io.sesame.Admin.Stats","m\u0065thod":"io.sesame.Accounts.List"}"#,
        #"{"method":"a.b.C","parameters":{"account":"x","account":"y"}}"#,
        #"{"method":"a.b.C","parameters":{"tokens":{"accessToken":"a","accessToken":"b"}}}"#,
        #"{"method":"a.b.C","parameters":{"list":[{"k":1},{"k":2,"k":3}]}}"#,
        // Every escape §7 has, read as it reads.
        #"{"method":"a.b.C","parameters":{"a/b":1,"a\/b":2}}"#,
        #"{"method":"a.b.C","parameters":{"\"\\":1,"\u0022\u005C":2}}"#,
        #"{"method":"a.b.C","parameters":{"\b\f\n\r\t":1,"\u0008\u000c\u000A\u000d\u0009":2}}"#,
    ])
    func aKeyNamedTwiceInOneObjectIsAnInvalidMessage(_ text: String) {
        #expect(refusal(text)?.contains("twice") == true, "\(text)")
    }

    @Test(arguments: [
        #"{"method":"a.b.C","parameters":{"K":1,"\u212A":2}}"#, #"{"méthod":"a.b.C"}"#,
        #"{"method":"a.b.C","parameters":{"\u0080":1}}"#, #"{"method":"a.b.C","parameters":{"x\ud83d\ude00":1}}"#,
    ])
    func aNonASCIIKeyIsAnInvalidMessage(_ text: String) {
        // U+212A KELVIN SIGN is canonically "K": a parser comparing strings would see one key twice.
        #expect(refusal(text) == "a key is not an ASCII name")
    }

    @Test func escapedBackslashesAndKeyLikeValuesAreReadAsJSONReadsThem() throws {
        #expect(refusal(#"{"method":"a.b.C","parameters":{"a\\":1,"a\\":2}}"#)?.contains("twice") == true)
        #expect(try call(#"{"method":"a.b.C","parameters":{"a":"b","b":1}}"#).method == "a.b.C")
    }

    @Test func theSameKeyInDifferentObjectsAndInsideStringsIsFine() throws {
        let text = #"{"method":"a.b.C","parameters":{"k":"\"k\":{[","o":{"k":1},"l":[{"k":1},{"k":2}]}}"#
        #expect(try call(text).method == "a.b.C")
    }

    /// Each object's keys are its own: those of an object inside it are forgotten once it ends,
    /// before the outer object's next key, however many there were.
    @Test func anInnerObjectsKeysDoNotCountForTheOuterOne() throws {
        let inner = (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        #expect(try call(#"{"method":"a.b.C","parameters":{"o":{"p":1},"p":2}}"#).method == "a.b.C")
        #expect(try call(#"{"method":"a.b.C","parameters":{"o":{\#(inner)},"k39":2,"k0":3}}"#).method == "a.b.C")
    }

    /// Past a handful of keys an object's keys go into a set: a key named twice is still found
    /// there, written plainly or with escapes.
    @Test func aKeyNamedTwiceAmongManyIsFound() {
        let keys = (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        #expect(refusal(#"{"method":"a.b.C","parameters":{\#(keys),"k3":1}}"#)?.contains("twice") == true)
        #expect(refusal(#"{"method":"a.b.C","parameters":{\#(keys),"k\u0033":1}}"#)?.contains("twice") == true)
        #expect(refusal(#"{"method":"a.b.C","parameters":{\#(keys),"k39":1}}"#)?.contains("twice") == true)
    }

    @Test func nestingUpToTheLimitIsAcceptedAndDeeperIsRefused() throws {
        // The envelope and `parameters` are two levels; the value adds the rest.
        let fits = VarlinkCall.maximumNesting - 2
        let deep = { (levels: Int) in
            #"{"method":"a.b.C","parameters":{"x":"# + String(repeating: "[", count: levels)
                + String(repeating: "]", count: levels) + "}}"
        }
        #expect(try call(deep(fits)).method == "a.b.C")
        #expect(refusal(deep(fits + 1)) == "nested deeper than \(VarlinkCall.maximumNesting) levels")
        #expect(refusal(deep(500_000))?.hasPrefix("nested deeper") == true)
    }

    @Test func anObjectOfManyKeysIsAccepted() throws {
        let keys = (0..<100_000).map { #""k\#($0)":0"# }.joined(separator: ",")
        #expect(try call(#"{"method":"a.b.C","parameters":{\#(keys)}}"#).method == "a.b.C")
    }

    @Test func aWideMessageIsAccepted() throws {
        let wide =
            #"{"method":"a.b.C","parameters":{"x":["# + Array(repeating: "[]", count: 200_000).joined(separator: ",")
            + "]}}"
        #expect(try call(wide).method == "a.b.C")
    }
}
