import Foundation
import NIOCore
import SesameFuzzing
import SesameProtocol
@_spi(Fuzzing) import SesameVarlink
import SesameWire

/// A method's parameter and reply types.
private typealias Signature = (parameters: any Codable.Type, reply: any Codable.Type)

/// Every method of the four interfaces, in the order their contracts list them (an input picks
/// one by its index).
private let methods: [any VarlinkMethodDescription] =
    AccountsContract.methods + EventsContract.methods + AdminContract.methods + SharesContract.methods

/// The qualified names of `methods`, made once: building them was string work that every input paid for.
private let methodNames: [String] = methods.map(\.qualifiedName)

/// The types of the method `methodNames[index]` names, as the handlers and SesameClient decode them.
private func signature(at index: Int) -> Signature {
    (methods[index].parametersType, methods[index].replyType)
}

/// The message size limits tried: tiny ones so that inputs of a few kilobytes reach the
/// too-large path, and the server's default.
private let messageSizeLimits = [16, 300, 1 << 20]

/// Splits the input into messages as the server does, in reads of a size the first bytes choose,
/// and checks the cut against the client's decoder reading the whole input at once: the same
/// messages and the same failure, whatever the read sizes. Each message is then read as a call
/// the way the server does and as a reply the way SesameClient does.
func fuzzVarlink(_ buffer: UnsafeRawBufferPointer) {
    var input = FuzzInput(buffer)
    let limit = messageSizeLimits[input.choice(messageSizeLimits.count)]
    let readSize = 1 + input.choice(64)
    let bytes = input.remaining
    var server = ServerFraming(maximumMessageSize: limit)
    var served: [ServerFraming.Item] = []
    var offset = 0
    while offset < bytes.count {
        served += server.receive(ByteBuffer(bytes: bytes[offset..<min(offset + readSize, bytes.count)]))
        precondition(server.queuedMessageBytes == 0, "messages stayed queued after they were served")
        precondition(server.heldBytes == 0 || served.last.map(isMessage) != false, "bytes held after a failure")
        offset += readSize
    }
    served += server.endOfInput()
    precondition(server.heldBytes == 0, "the unfinished message outlived the end of input")
    let expected = framesOfWholeInput(bytes, limit: limit)
    precondition(served == expected, "the server cut the stream differently from a reader of the whole input")
    for item in served {
        if case .message(let frame) = item {
            readFrame(frame, expectingReplyOf: signature(at: frame.readableBytes % methodNames.count))
        }
    }
}

private func isMessage(_ item: ServerFraming.Item) -> Bool {
    if case .message = item { true } else { false }
}

/// The messages, and the failure that ends them if any, of `bytes` read at once by the client's decoder.
private func framesOfWholeInput(_ bytes: [UInt8], limit: Int) -> [ServerFraming.Item] {
    var decoder = VarlinkFrameDecoder(maximumMessageSize: limit)
    var stream = ByteBuffer(bytes: bytes)
    var items: [ServerFraming.Item] = []
    do {
        while let frame = try decoder.decode(buffer: &stream) { items.append(.message(frame)) }
        if stream.readableBytes > 0 { items.append(.failed(.truncatedMessage(bytes: stream.readableBytes))) }
    } catch let error as VarlinkFramingError {
        items.append(.failed(error))
    } catch {
        preconditionFailure("the decoder threw \(error), which is not a framing error")
    }
    return items
}

/// Reads one frame both ways: as a call, whose parameters are decoded as the method it names
/// takes them, and as the reply to a call of `expected` (chosen by the frame's length, which the
/// fuzzer steers without a byte of its own that would shift every seed). A call that parses must be JSON that
/// Foundation reads as the same call (the envelope is read without a decoder), and must survive
/// its own re-encoding.
private func readFrame(
    _ frame: ByteBuffer,
    expectingReplyOf expected: Signature
) {
    if let call = try? VarlinkCall(frame: frame) {
        let object = try? JSONSerialization.jsonObject(with: Data(frame.readableBytesView)) as? [String: Any]
        precondition(object != nil, "a call that parsed is not JSON to Foundation")
        precondition(
            object?["method"] as? String == call.method && (object?["more"] as? Bool ?? false) == call.more
                && (object?["oneway"] as? Bool ?? false) == call.oneway,
            "a call that parsed reads as another call to Foundation"
        )
        if let index = methodNames.firstIndex(of: call.method) {
            _ = try? call.decodeParameters(signature(at: index).parameters)
        }
        guard let encoded = try? call.frame(), let again = try? VarlinkCall(frame: encoded.withoutTerminator())
        else {
            preconditionFailure("a call that parsed does not parse after re-encoding")
        }
        precondition(again.method == call.method && again.more == call.more && again.oneway == call.oneway)
    }
    if let reply = try? VarlinkReplyMessage(frame: frame) {
        _ = try? reply.decode(expected.reply)
    }
    checkTokenReply(Array(frame.readableBytesView))
}

/// `sesamectl token` reads a reply without a JSON decoder (`ScannedReply`): what it reads as an
/// error or a string parameter must be what Foundation reads there.
private func checkTokenReply(_ bytes: [UInt8]) {
    guard let read = ScannedReply(bytes) else { return }
    let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    precondition(object != nil, "a reply the scan reads is not a JSON object to Foundation")
    // Bytes, not String equality, which would let canonically equivalent texts pass.
    precondition(
        read.error.map { Array($0.utf8) } == (object?["error"] as? String).map { Array($0.utf8) },
        "an error Foundation reads otherwise"
    )
    if let token = read.stringParameter("accessToken") {
        let parameters = object?["parameters"] as? [String: Any]
        let foundation = parameters?["accessToken"] as? String
        precondition(foundation.map { Array($0.utf8) } == Array(token.utf8), "a token Foundation reads otherwise")
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
