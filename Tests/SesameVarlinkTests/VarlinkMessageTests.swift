import NIOCore
import SesameWire
import Testing

@testable import SesameVarlink

@Suite struct VarlinkMessageTests {
    private func parse(_ text: String) throws(VarlinkProtocolError) -> VarlinkCall {
        try VarlinkCall(frame: ByteBuffer(string: text))
    }

    /// A reply sent many times (an event, a token) is framed once: every connection writes
    /// the same buffer, and the frame of the other kind is still made fresh and right.
    @Test(arguments: [true, false]) func aFramedReplyHandsOutOneBuffer(continues: Bool) throws {
        let plain = try VarlinkReply(["n": 1])
        let reply = plain.framed(continues: continues)
        let first = reply.frame(continues: continues)
        let second = reply.frame(continues: continues)
        #expect(first == plain.frame(continues: continues))
        #expect(reply.frame(continues: !continues) == plain.frame(continues: !continues))
        let address = { (buffer: ByteBuffer) in buffer.withUnsafeReadableBytes { Int(bitPattern: $0.baseAddress) } }
        #expect(address(first) == address(second))
        let (own, another) = (plain.frame(continues: continues), plain.frame(continues: continues))
        #expect(address(own) != address(another))
    }

    @Test func parsesACallWithAllMembers() throws {
        let call = try parse(#"{"method":"io.sesame.Events.Subscribe","parameters":{"since":4},"more":true}"#)
        #expect(call.interface == "io.sesame.Events")
        #expect(call.methodName == "Subscribe")
        #expect(call.parameters == ["since": .int(4)])
        #expect(call.more && !call.oneway)
    }

    @Test func treatsAbsentParametersAsEmpty() throws {
        let call = try parse(#"{"method":"org.varlink.service.GetInfo"}"#)
        #expect(call.parameters.isEmpty)
    }

    @Test(arguments: [
        "not json",
        #"{"parameters":{}}"#,
        #"{"method":42}"#,
        #"{"method":"GetInfo"}"#,
        #"{"method":"org.varlink.service.getInfo"}"#,
        #"{"method":"org.varlink..GetInfo"}"#,
        #"{"method":"org.varlink.service.GetInfo","parameters":[1]}"#,
        #"{"method":"org.varlink.service.GetInfo","more":"yes"}"#,
        #"{"method":"org.varlink.service.GetInfo","upgrade":true}"#,
    ])
    func refusesWhatIsNotACall(_ text: String) {
        #expect {
            try parse(text)
        } throws: { error in
            if case .invalidMessage? = error as? VarlinkProtocolError { true } else { false }
        }
    }

    @Test func saysWhetherTheParametersOrTheWholeMessageIsWrong() {
        #expect(throws: VarlinkProtocolError.invalidMessage("'parameters' must be an object")) {
            try parse(#"{"method":"org.varlink.service.GetInfo","parameters":[1]}"#)
        }
        #expect {
            try parse("[1]")
        } throws: { error in
            if case .invalidMessage(let reason)? = error as? VarlinkProtocolError {
                reason.hasPrefix("not a Varlink call")
            } else {
                false
            }
        }
    }

    @Test func namesTheParameterThatDoesNotDecode() throws {
        struct Parameters: Decodable { var interface: String }
        let call = try parse(#"{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":1}}"#)
        #expect(throws: VarlinkError.invalidParameter("interface")) {
            try call.decodeParameters(Parameters.self)
        }
        let empty = try parse(#"{"method":"org.varlink.service.GetInterfaceDescription"}"#)
        #expect(throws: VarlinkError.invalidParameter("interface")) {
            try empty.decodeParameters(Parameters.self)
        }
    }

    @Test func framesAReplyWithAndWithoutContinues() throws {
        let reply = try VarlinkReply(["a": 1])
        #expect(String(buffer: reply.frame(continues: false)) == "{\"parameters\":{\"a\":1}}\0")
        #expect(String(buffer: reply.frame(continues: true)) == "{\"continues\":true,\"parameters\":{\"a\":1}}\0")
    }

    @Test func framesAnErrorReply() {
        let frame = VarlinkError.methodNotFound("a.b.C").frame()
        #expect(
            String(buffer: frame)
                == "{\"error\":\"org.varlink.service.MethodNotFound\",\"parameters\":{\"method\":\"a.b.C\"}}\0"
        )
    }

    @Test func readsRepliesWithAbsentOrFalseContinues() throws {
        let absent = try VarlinkReplyMessage(frame: ByteBuffer(string: #"{"parameters":{"x":true}}"#))
        let explicit = try VarlinkReplyMessage(frame: ByteBuffer(string: #"{"parameters":{},"continues":false}"#))
        let more = try VarlinkReplyMessage(frame: ByteBuffer(string: #"{"continues":true}"#))
        #expect(!absent.continues && !explicit.continues && more.continues)
        #expect(absent.parameters == ["x": true])
    }

    @Test func roundTripsACallThroughItsFrame() throws {
        var frame = try VarlinkCall(method: "a.b.C", parameters: ["k": "v"], oneway: true).frame()
        #expect(frame.readableBytesView.last == 0)
        frame.moveWriterIndex(to: frame.writerIndex - 1)
        let call = try VarlinkCall(frame: frame)
        #expect(call.method == "a.b.C" && call.parameters == ["k": "v"] && call.oneway)
    }

    /// Varlink: a method is `interface.Method`, the interface a reverse-domain name of at least
    /// two parts, the method starting with a capital letter; only ASCII letters, digits, `-`, `_`.
    @Test(arguments: [
        ("io.sesame.Accounts.List", true), ("a.b.C", true), ("org.varlink.service.GetInfo", true),
        ("a-b.c_d.M1", true), ("a.B", false), ("a..b.C", false), (".a.b.C", false), ("a.b.C.", false),
        ("a.b.c", false), ("io.sesame.Accounts.List ", false), ("io.sésame.Accounts.List", false),
        ("a.b.\u{0301}C", false), ("", false),
    ])
    func aMethodNameIsQualifiedOnlyAsVarlinkSays(_ name: String, _ qualified: Bool) {
        #expect(VarlinkCall.isQualifiedMethodName(name) == qualified)
    }
}
