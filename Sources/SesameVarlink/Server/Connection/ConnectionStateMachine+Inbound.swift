import NIOCore

/// What arrives on a connection, split into messages and queued until it is served.
extension ConnectionStateMachine {
    /// What the handler does next with what has arrived.
    enum Step {
        /// Parse the message and start its call here, on the loop.
        case parseOnLoop(ByteBuffer)
        /// Parse the message off the loop: it is large, or the connection has had its share of
        /// the loop. The state is `parsing` until `parsedOffLoop`.
        case parseOffLoop(ByteBuffer)
        /// The byte stream could not be split into messages: answer why and end.
        case refuse(VarlinkFramingError)
        /// The peer has sent all it will, and all of it was answered: end.
        case end
        /// Nothing to do until something else happens.
        case wait
    }

    /// What came in, in order: a message, the framing's verdict on the stream, or its end.
    enum Inbound {
        case message(ByteBuffer)
        case framingFailed(VarlinkFramingError)
        case inputClosed
    }

    /// What arrived and waits to be served, in order. The first is held in place and a queue
    /// is made only for more, and let go of once empty: a connection that sends one call at a
    /// time, as most do, never has one (0.1 KiB per idle subscriber).
    struct InboundQueue {
        private var first: Inbound?
        private var rest: CircularBuffer<Inbound>?
        /// The bytes of the messages waiting.
        private(set) var messageBytes = 0

        var isEmpty: Bool { first == nil }

        mutating func append(_ inbound: Inbound) {
            if case .message(let frame) = inbound { messageBytes += frame.readableBytes }
            guard first != nil else {
                first = inbound
                return
            }
            if rest == nil { rest = CircularBuffer(initialCapacity: 4) }
            rest?.append(inbound)
        }

        mutating func popFirst() -> Inbound? {
            guard let next = first else { return nil }
            first = rest?.popFirst()
            if rest?.isEmpty == true { rest = nil }
            if case .message(let frame) = next { messageBytes -= frame.readableBytes }
            return next
        }

        mutating func removeAll() {
            self = InboundQueue()
        }
    }

    /// Splits the connection's byte stream into messages as it arrives, for the queue: here
    /// rather than in a `ByteToMessageHandler` in front, whose buffers and context cost every
    /// idle subscriber 0.4 KiB.
    struct MessageSplitter {
        private var decoder: VarlinkFrameDecoder
        /// The start of a message still arriving, if any.
        private var unfinished: ByteBuffer?
        /// Messages completed so far: a read that completes one shows progress.
        private(set) var completed = 0
        /// The stream could not be split: what arrives from now on is dropped, and the failure
        /// is answered in its turn, after the calls before it.
        private var failed = false

        init(maximumMessageSize: Int) {
            decoder = VarlinkFrameDecoder(maximumMessageSize: maximumMessageSize)
        }

        /// Adds `bytes` to what arrived, queueing each message it completes (or the failure).
        mutating func split(_ bytes: ByteBuffer, into queue: inout InboundQueue) {
            guard !failed else { return }
            var bytes = bytes
            if var earlier = unfinished {
                unfinished = nil  // so that `earlier` is the only reference and grows in place
                earlier.discardReadBytes()
                earlier.writeBuffer(&bytes)
                bytes = earlier
            }
            do {
                while let message = try decoder.nextMessage(in: &bytes) {
                    queue.append(.message(message))
                    completed &+= 1
                }
                if bytes.readableBytes > 0 { unfinished = bytes }
            } catch {
                failed = true
                queue.append(.framingFailed(error))
            }
        }

        /// The peer sent all it will: a message it did not finish is queued as a failure.
        mutating func endOfInput(into queue: inout InboundQueue) {
            guard let size = discardUnfinished(), !failed else { return }
            failed = true
            queue.append(.framingFailed(.truncatedMessage(bytes: size)))
        }

        /// The bytes held for the message still arriving (its buffer's capacity): what a peer
        /// that keeps half a message pending makes this connection keep.
        var heldBytes: Int { unfinished?.capacity ?? 0 }

        /// Forgets the message still arriving; its size so far, if there was one.
        mutating func discardUnfinished() -> Int? {
            defer {
                unfinished = nil
                // Its scan position belongs to the message dropped.
                decoder = VarlinkFrameDecoder(maximumMessageSize: decoder.maximumMessageSize)
            }
            return unfinished?.readableBytes
        }
    }
}
