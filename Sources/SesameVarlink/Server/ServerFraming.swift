import NIOCore

/// The server's own cutting of a connection's bytes into messages, offered to the varlink fuzz
/// target: hostile input meets this path, not the client's decoder, so this is what must be
/// fuzzed. It is the connection handler's state machine itself, each call answered at once.
@_spi(Fuzzing)
public struct ServerFraming {
    /// One thing the server would serve, in order.
    public enum Item: Equatable {
        /// A complete message, without its terminating NUL.
        case message(ByteBuffer)
        /// The stream could not be split; nothing after it is served.
        case failed(VarlinkFramingError)
    }

    private var machine: ConnectionStateMachine

    /// A connection whose messages may be at most `maximumMessageSize` bytes.
    public init(maximumMessageSize: Int) {
        machine = ConnectionStateMachine(maximumMessageSize: maximumMessageSize)
    }

    /// Takes one read's `bytes` and returns what they completed.
    public mutating func receive(_ bytes: ByteBuffer) -> [Item] {
        _ = machine.received(bytes)
        return serve()
    }

    /// The peer closed its side: a message left unfinished comes back as a failure.
    public mutating func endOfInput() -> [Item] {
        machine.inputEnded()
        return serve()
    }

    /// The bytes held for a message still arriving: what the peer makes the server keep.
    public var heldBytes: Int { machine.unfinishedBytes }

    /// The bytes of complete messages queued and not yet served (none once `receive` returns).
    public var queuedMessageBytes: Int { machine.waitingBytes }

    /// Serves what arrived as the connection handler does, each call answered as it starts and
    /// the loop given back at once whenever the machine yields it.
    private mutating func serve() -> [Item] {
        var items: [Item] = []
        machine.turnBegins()
        while true {
            switch machine.next() {
            case .parseOnLoop(let frame):
                items.append(.message(frame))
            case .parseOffLoop(let frame):
                items.append(.message(frame))
                _ = machine.parsedOffLoop()
            case .refuse(let error):
                items.append(.failed(error))
                _ = machine.beginEnding()
                return items
            case .end:
                _ = machine.beginEnding()
                return items
            case .wait:
                return items
            }
            if machine.shouldYield(), machine.resume() { machine.turnBegins() }
        }
    }
}
