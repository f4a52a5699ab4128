import Glibc
import NIOCore

/// One call on a connection of its own, made with blocking system calls on the calling thread:
/// for a program that makes a single call and exits (`sesamectl token`), which then starts no
/// event loop and none of its threads, the larger part of such a program's run. The same wire,
/// connect (`QueuedConnect`) and errors as `VarlinkClient`.
public enum VarlinkOneShot {
    /// Calls `method` on the service at `path` and returns its reply; an error reply is thrown as
    /// `VarlinkError`, a failure to connect or read as `VarlinkClientError`. Blocks the calling
    /// thread until the reply has come.
    public static func call(
        _ method: String,
        parameters: [String: JSONValue] = [:],
        unixSocketPath path: String,
        maximumMessageSize: Int = 16 << 20
    ) throws -> VarlinkReplyMessage {
        let frame = try VarlinkCall(method: method, parameters: parameters).frame()
        let descriptor: CInt
        do {
            descriptor = try QueuedConnect.connectWaiting(unixSocketPath: path, patience: VarlinkClient.busyPatience)
        } catch let error as IOError {
            throw VarlinkClientError(connecting: path, error)
        }
        defer { close(descriptor) }
        try send(frame, to: descriptor)
        let reply: VarlinkReplyMessage
        do {
            reply = try VarlinkReplyMessage(frame: receive(from: descriptor, limit: maximumMessageSize))
        } catch let error as VarlinkProtocolError {
            throw VarlinkClientError.invalidReply("\(error)")
        }
        if let name = reply.error { throw VarlinkError(name, parameters: reply.parameters) }
        return reply
    }

    /// Writes all of `frame`, retrying after signals and short writes. MSG_NOSIGNAL: a program
    /// making one call starts no event loop, so nothing set SIGPIPE aside, and a peer that has
    /// closed (a share that ended) would end the program without a word instead of failing the call.
    static func send(_ frame: ByteBuffer, to descriptor: CInt) throws(VarlinkClientError) {
        var remaining = frame.readableBytesView[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, CInt(MSG_NOSIGNAL))
            }
            if written < 0 {
                guard errno == EINTR else { throw .connectionClosed }
                continue
            }
            remaining = remaining.dropFirst(written)
        }
    }

    /// Reads up to the NUL that ends the first reply, and returns the reply without it.
    private static func receive(from descriptor: CInt, limit: Int) throws(VarlinkClientError) -> ByteBuffer {
        // Cut by the same decoder as every other reader of the wire, the server's included.
        var decoder = VarlinkFrameDecoder(maximumMessageSize: limit)
        var received = ByteBuffer()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .connectionClosed }
            received.writeBytes(chunk[..<count])
            do {
                if let reply = try decoder.nextMessage(in: &received) { return reply }
            } catch {
                throw .invalidReply("a reply longer than \(limit) bytes")
            }
        }
    }
}
