import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why a byte stream could not be split into Varlink messages.
public enum VarlinkFramingError: Error, Sendable, Equatable {
    /// More than `limit` bytes arrived without a terminating NUL.
    case messageTooLarge(limit: Int)
    /// The peer closed the connection in the middle of a message.
    case truncatedMessage(bytes: Int)
}

/// Splits a Varlink byte stream into messages at each NUL byte, refusing to buffer more than
/// `maximumMessageSize` bytes of one message so a peer cannot make the process allocate without bound.
public struct VarlinkFrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    /// The largest message, without its NUL, that is accepted.
    public let maximumMessageSize: Int
    /// How far into the readable bytes a NUL has already been searched for, so a message arriving
    /// in many reads is scanned once, not once per read.
    private var scanned = 0

    /// Creates a decoder that accepts messages of up to `maximumMessageSize` bytes.
    public init(maximumMessageSize: Int) {
        precondition(maximumMessageSize > 0, "the message size limit must be positive")
        self.maximumMessageSize = maximumMessageSize
    }

    public mutating func decode(buffer: inout ByteBuffer) throws -> ByteBuffer? {
        try nextMessage(in: &buffer)
    }

    /// The next whole message in `buffer` (read from it), or nil when none has fully arrived.
    mutating func nextMessage(in buffer: inout ByteBuffer) throws(VarlinkFramingError) -> ByteBuffer? {
        // memchr over the raw bytes: a generic walk of the buffer's view cost ~0.1 s per MiB
        // in a debug build, on the thread every connection shares.
        let scannedBefore = scanned
        let nul = buffer.withUnsafeReadableBytes { bytes -> Int? in
            guard scannedBefore < bytes.count, let base = bytes.baseAddress,
                let found = memchr(base + scannedBefore, 0, bytes.count - scannedBefore)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(found))
        }
        guard let length = nul else {
            scanned = buffer.readableBytes
            if buffer.readableBytes > maximumMessageSize {
                throw VarlinkFramingError.messageTooLarge(limit: maximumMessageSize)
            }
            return nil
        }
        scanned = 0
        if length > maximumMessageSize {
            throw VarlinkFramingError.messageTooLarge(limit: maximumMessageSize)
        }
        // `length` was found inside the readable bytes, so both reads succeed.
        let message = buffer.readSlice(length: length) ?? ByteBuffer()
        buffer.moveReaderIndex(forwardBy: 1)
        return message
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> ByteBuffer? {
        if let message = try decode(buffer: &buffer) {
            return message
        }
        if buffer.readableBytes > 0 {
            let bytes = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: bytes)
            throw VarlinkFramingError.truncatedMessage(bytes: bytes)
        }
        return nil
    }
}
