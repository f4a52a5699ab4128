import NIOCore

/// What a connection handler keeps track of between calls.
extension VarlinkConnectionHandler {
    /// What came in, in order: a message, the framing's verdict on the stream, or its end.
    enum Inbound {
        case message(ByteBuffer)
        case framingFailed(VarlinkFramingError)
        case inputClosed
    }

    /// Whether the next call may start.
    enum Phase {
        /// Nothing is being answered.
        case ready
        /// A task answers a call (or parses a large one) off the loop.
        case offLoop
        /// A reply was written but the peer is not reading: the call counts as being answered
        /// until the reply has room to leave.
        case waitingForPeer
        /// Enough calls were answered in a row: the rest wait for the loop's next turn, after
        /// the other connections that are ready.
        case yielding
        /// The connection closes once what was written has been sent.
        case ending
    }
}
