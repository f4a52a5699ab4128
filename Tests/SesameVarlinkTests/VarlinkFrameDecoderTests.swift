import NIOCore
import NIOTestUtils
import Testing

@testable import SesameVarlink

@Suite struct VarlinkFrameDecoderTests {
    private func decodeAll(_ chunks: [String], limit: Int = 64) throws -> [String] {
        var decoder = VarlinkFrameDecoder(maximumMessageSize: limit)
        var buffer = ByteBuffer()
        var messages: [String] = []
        for chunk in chunks {
            buffer.writeString(chunk)
            while let message = try decoder.decode(buffer: &buffer) {
                messages.append(String(buffer: message))
            }
        }
        return messages
    }

    @Test func splitsPipelinedMessagesAtEachNUL() throws {
        #expect(try decodeAll(["{\"a\":1}\0{\"b\":2}\0{\"c\""]) == [#"{"a":1}"#, #"{"b":2}"#])
    }

    @Test func joinsAMessageThatArrivesInPieces() throws {
        #expect(try decodeAll(["{\"me", "thod\":", "\"x\"}\0"]) == [#"{"method":"x"}"#])
    }

    @Test func acceptsAMessageOfExactlyTheLimit() throws {
        let message = String(repeating: "x", count: 64)
        #expect(try decodeAll([message + "\0"]) == [message])
    }

    @Test func refusesAMessageOverTheLimitBeforeItsEnd() {
        #expect(throws: VarlinkFramingError.messageTooLarge(limit: 64)) {
            try decodeAll([String(repeating: "x", count: 40), String(repeating: "x", count: 40)])
        }
    }

    @Test func refusesAnOversizedMessageThatArrivedWhole() {
        #expect(throws: VarlinkFramingError.messageTooLarge(limit: 64)) {
            try decodeAll([String(repeating: "x", count: 65) + "\0"])
        }
    }

    @Test func reportsATruncatedMessageAtEOF() throws {
        var decoder = VarlinkFrameDecoder(maximumMessageSize: 64)
        var buffer = ByteBuffer(string: "{\"method\":")
        #expect(try decoder.decode(buffer: &buffer) == nil)
        #expect(throws: VarlinkFramingError.truncatedMessage(bytes: 10)) {
            _ = try decoder.decodeLast(buffer: &buffer, seenEOF: true)
        }
    }

    @Test func endsCleanlyAtEOFBetweenMessages() throws {
        var decoder = VarlinkFrameDecoder(maximumMessageSize: 64)
        var buffer = ByteBuffer(string: "{}\0")
        #expect(try decoder.decodeLast(buffer: &buffer, seenEOF: true).map { String(buffer: $0) } == "{}")
        #expect(try decoder.decodeLast(buffer: &buffer, seenEOF: true) == nil)
    }
}

/// The frame decoder as a `ByteToMessageDecoder`, so NIO's verifier can feed it byte by byte,
/// all at once and in every split, and check it leaves nothing behind.
private struct VerifiedFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    var inner = VarlinkFrameDecoder(maximumMessageSize: 64)

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let message = try inner.decode(buffer: &buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(message))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        guard let message = try inner.decodeLast(buffer: &buffer, seenEOF: seenEOF) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(message))
        return .continue
    }
}

@Suite struct VarlinkFrameDecoderVerifierTests {
    @Test func nioVerifierFindsTheSameMessagesHoweverTheBytesArrive() throws {
        try ByteToMessageDecoderVerifier.verifyDecoder(
            stringInputOutputPairs: [
                ("{\"a\":1}\u{0}", [ByteBuffer(string: "{\"a\":1}")]),
                ("{}\u{0}{\"b\":[]}\u{0}", [ByteBuffer(string: "{}"), ByteBuffer(string: "{\"b\":[]}")]),
            ],
            decoderFactory: { VerifiedFrameDecoder() }
        )
    }
}
