import Foundation
import NIOCore
import SesameFuzzing
import SesameProtocol
import SesameVarlink

/// Every parameter and reply type of the three interfaces, as the handlers and SesameClient decode them.
private func contractTypes() -> [(parameters: any Codable.Type, reply: any Codable.Type)] {
    AccountsContract.Method.allCases.map(\.signature) + EventsContract.Method.allCases.map(\.signature)
        + AdminContract.Method.allCases.map(\.signature)
}

/// Splits the input into frames as the server does (in chunks the first byte chooses), then reads
/// each frame as a call the way the server does and as a reply the way SesameClient does.
func fuzzVarlink(_ buffer: UnsafeRawBufferPointer) {
    var input = FuzzInput(buffer)
    let chunk = 1 + input.choice(64)
    var decoder = VarlinkFrameDecoder(maximumMessageSize: 1 << 20)  // the server's default
    var stream = ByteBuffer()
    let bytes = input.remaining
    var offset = 0
    do {
        while offset < bytes.count {
            stream.writeBytes(bytes[offset..<min(offset + chunk, bytes.count)])
            offset += chunk
            while let frame = try decoder.decode(buffer: &stream) { readFrame(frame) }
        }
        while let frame = try decoder.decodeLast(buffer: &stream, seenEOF: true) { readFrame(frame) }
    } catch {
        // A framing error closes the connection; nothing more to read.
    }
}

/// Reads one frame both ways. A call that parses must be JSON that Foundation reads as the
/// same call (the envelope is read without a decoder), and must survive its own re-encoding.
private func readFrame(_ frame: ByteBuffer) {
    if let call = try? VarlinkCall(frame: frame) {
        let object = try? JSONSerialization.jsonObject(with: Data(frame.readableBytesView)) as? [String: Any]
        precondition(object != nil, "a call that parsed is not JSON to Foundation")
        precondition(
            object?["method"] as? String == call.method && (object?["more"] as? Bool ?? false) == call.more
                && (object?["oneway"] as? Bool ?? false) == call.oneway,
            "a call that parsed reads as another call to Foundation"
        )
        for types in contractTypes() { _ = try? call.decodeParameters(types.parameters) }
        guard let encoded = try? call.frame(), let again = try? VarlinkCall(frame: encoded.withoutTerminator())
        else {
            preconditionFailure("a call that parsed does not parse after re-encoding")
        }
        precondition(again.method == call.method && again.more == call.more && again.oneway == call.oneway)
    }
    if let reply = try? VarlinkReplyMessage(frame: frame) {
        for types in contractTypes() { _ = try? reply.decode(types.reply) }
    }
}

extension ByteBuffer {
    /// The frame without its trailing NUL, as the frame decoder hands it on.
    fileprivate func withoutTerminator() -> ByteBuffer {
        getSlice(at: readerIndex, length: Swift.max(readableBytes - 1, 0)) ?? ByteBuffer()
    }
}

/// Runs the target under libFuzzer (scripts/fuzz) or over corpus files.
@main
enum FuzzVarlinkMain {
    static func main() {
        FuzzMain.run { data, size in
            fuzzVarlink(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
    }
}
