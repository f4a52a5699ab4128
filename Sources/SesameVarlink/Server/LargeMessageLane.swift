import Dispatch
import NIOCore
import SesameWire

/// Where large messages are parsed: one serial queue of their own, off the cooperative pool that
/// answers every connection. Checking and decoding a message costs time in proportion to its
/// size; a user sending many 1 MiB messages from many connections would otherwise fill both
/// threads of the pool and hold up everyone's small calls behind their work. Here such messages
/// wait for each other, one at a time; a small call parsed on the loop waits for none of them,
/// while the calls of a connection past its share of the loop (a pipelining one) wait their turn here.
struct LargeMessageLane: Sendable {
    /// Messages up to this size are parsed where they arrive, on the event loop other
    /// connections share, and no more bytes than this are parsed there for one connection in a
    /// turn: a 16 KiB message of the most costly shape (`[[],[],...]`) takes about a millisecond
    /// in an optimized build. Sesame's own calls are far smaller except `ImportTokens` with large
    /// tokens, which is rare and may wait its turn here.
    static let threshold = 16 * 1024

    private let queue = DispatchQueue(label: "io.sesame.varlink.large-messages")

    /// Parses `frame` as a call, on the lane.
    func parse(_ frame: ByteBuffer) async -> Result<VarlinkCall, VarlinkProtocolError> {
        await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(
                    returning: Result { () throws(VarlinkProtocolError) in try VarlinkCall(frame: frame) }
                )
            }
        }
    }
}
