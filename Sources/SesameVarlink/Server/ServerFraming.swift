import NIOCore

/// The server's own cutting of a connection's bytes into messages (the connection handler's
/// splitter and inbound queue), offered to the varlink fuzz target: hostile input meets this
/// path, not the client's decoder, so this is what must be fuzzed.
@_spi(Fuzzing)
public struct ServerFraming {
    /// One thing the server would serve, in order.
    public enum Item: Equatable {
        /// A complete message, without its terminating NUL.
        case message(ByteBuffer)
        /// The stream could not be split; nothing after it is served.
        case failed(VarlinkFramingError)
    }

    private var splitter: VarlinkConnectionHandler.MessageSplitter
    private var queue = VarlinkConnectionHandler.InboundQueue()

    /// A connection whose messages may be at most `maximumMessageSize` bytes.
    public init(maximumMessageSize: Int) {
        splitter = VarlinkConnectionHandler.MessageSplitter(maximumMessageSize: maximumMessageSize)
    }

    /// Takes one read's `bytes` and returns what they completed.
    public mutating func receive(_ bytes: ByteBuffer) -> [Item] {
        splitter.split(bytes, into: &queue)
        return drain()
    }

    /// The peer closed its side: a message left unfinished comes back as a failure.
    public mutating func endOfInput() -> [Item] {
        splitter.endOfInput(into: &queue)
        return drain()
    }

    /// The bytes held for a message still arriving: what the peer makes the server keep.
    public var heldBytes: Int { splitter.heldBytes }

    /// The bytes of complete messages queued and not yet served (none once `receive` returns).
    public var queuedMessageBytes: Int { queue.messageBytes }

    private mutating func drain() -> [Item] {
        var items: [Item] = []
        while let inbound = queue.popFirst() {
            switch inbound {
            case .message(let frame): items.append(.message(frame))
            case .framingFailed(let error): items.append(.failed(error))
            case .inputClosed: break
            }
        }
        return items
    }
}
