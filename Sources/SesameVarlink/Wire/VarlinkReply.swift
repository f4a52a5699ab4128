import FoundationEssentials
import NIOCore
import SesameWire

/// The parameters of one successful reply, already encoded, so one event can be sent to many
/// subscribers without encoding it again.
public struct VarlinkReply: Sendable {
    /// The encoded JSON object that becomes the reply's `parameters`.
    public let encodedParameters: ByteBuffer
    /// The whole frame, made once by `framed(continues:)`: every connection it is sent to
    /// then writes this same buffer instead of a copy of its own.
    private var madeFrame: (continues: Bool, frame: ByteBuffer)?
    /// The stream a streaming call goes on through after its handler has returned
    /// (`continuing(on:)`); nil for a reply proper.
    private(set) var continuesOn: VarlinkReplyStream?

    /// Wraps parameters that are already encoded as a JSON object.
    public init(encodedParameters: ByteBuffer) {
        self.encodedParameters = encodedParameters
    }

    /// Encodes `parameters`, which must encode as a JSON object.
    public init(_ parameters: some Encodable) throws {
        self.encodedParameters = ByteBuffer(bytes: try JSONCoding.encode(parameters))
    }

    /// The reply of a streaming call left to `stream` (`VarlinkAnswer.continuing(on:)`).
    static func continuing(on stream: VarlinkReplyStream) -> VarlinkReply {
        var reply = VarlinkReply.empty
        reply.continuesOn = stream
        return reply
    }

    /// A reply with no parameters.
    public static let empty = VarlinkReply(encodedParameters: ByteBuffer(string: "{}"))

    /// The reply's parameters as `type` (an in-process caller reads a reply this way).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONCoding.decode(type, from: Data(encodedParameters.readableBytesView))
    }

    /// The wire form of this reply, NUL terminator included.
    public func frame(continues: Bool) -> ByteBuffer {
        if let madeFrame, madeFrame.continues == continues { return madeFrame.frame }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(encodedParameters.readableBytes + 32)
        buffer.writeString(continues ? #"{"continues":true,"parameters":"# : #"{"parameters":"#)
        buffer.writeImmutableBuffer(encodedParameters)
        buffer.writeString("}")
        buffer.writeInteger(UInt8(0))
        return buffer
    }

    /// This reply with its frame made now, for a reply sent many times (an event to every
    /// subscriber, a token to every caller): `frame(continues:)` then hands out the one buffer,
    /// which NIO writes from without copying.
    public func framed(continues: Bool) -> VarlinkReply {
        var reply = self
        reply.madeFrame = (continues, frame(continues: continues))
        return reply
    }
}

extension VarlinkError {
    /// The wire form of this error reply, NUL terminator included.
    public func frame() -> ByteBuffer {
        struct Envelope: Encodable {
            var error: String
            var parameters: [String: JSONValue]
        }
        // Encoding a String and a dictionary of JSONValue cannot fail; fall back to the bare name
        // rather than crash should Foundation ever disagree.
        let data = (try? JSONCoding.encode(Envelope(error: name, parameters: parameters))) ?? Data()
        var buffer = ByteBuffer(bytes: data.isEmpty ? Data(#"{"error":"\#(name)"}"#.utf8) : data)
        buffer.writeInteger(UInt8(0))
        return buffer
    }
}

/// One reply as a client receives it: parameters, or an error, and whether more replies follow.
public struct VarlinkReplyMessage: Sendable {
    /// The reply's parameters (for an error reply, the error's parameters).
    public var parameters: [String: JSONValue]
    /// The server will send further replies to the same call.
    public var continues: Bool
    /// The qualified error name when the call failed.
    public var error: String?

    private struct Envelope: Decodable {
        var parameters: JSONValue?
        var continues: Bool?
        var error: String?
    }

    /// Parses one NUL-stripped reply frame.
    public init(frame: ByteBuffer) throws(VarlinkProtocolError) {
        let envelope: Envelope
        do {
            envelope = try JSONCoding.decode(Envelope.self, from: Data(frame.readableBytesView))
        } catch {
            throw .invalidMessage("not a Varlink reply: \(DecodingError.summary(of: error))")
        }
        self.parameters = envelope.parameters?.objectValue ?? [:]
        self.continues = envelope.continues ?? false
        self.error = envelope.error
    }

    /// Decodes the parameters into the caller's type.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValue.object(parameters).decode(as: type)
    }
}
