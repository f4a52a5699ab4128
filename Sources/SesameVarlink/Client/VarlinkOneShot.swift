import NIOCore
import SesameWire

/// One call on a connection of its own, made with blocking system calls on the calling thread
/// (`BlockingCall`): for a program that makes a single call and exits, which then starts no
/// event loop. The same wire, connect and errors as `VarlinkClient`.
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
        let received: [UInt8]
        do {
            received = try BlockingCall.exchange(
                BlockingCall.frame(method, parameters: parameters),
                unixSocketPath: path,
                maximumMessageSize: maximumMessageSize
            )
        } catch {
            throw VarlinkClientError(path: path, error)
        }
        return try reply(from: received)
    }

    /// The reply `received` holds (one whole frame, without its NUL), as `call` returns it: an
    /// error reply is thrown as `VarlinkError`, anything else that is not a reply as
    /// `VarlinkClientError.invalidReply`.
    public static func reply(from received: [UInt8]) throws -> VarlinkReplyMessage {
        let reply: VarlinkReplyMessage
        do {
            reply = try VarlinkReplyMessage(frame: ByteBuffer(bytes: received))
        } catch {
            throw VarlinkClientError.invalidReply("\(error)")
        }
        if let name = reply.error { throw VarlinkError(name, parameters: reply.parameters) }
        return reply
    }
}

extension VarlinkClientError {
    /// How a one-shot call to `path` that got no reply is reported, in the words of a
    /// `VarlinkClient`'s own failures.
    public init(path: String, _ failure: BlockingCallError) {
        switch failure {
        case .cannotConnect(let failure):
            self.init(connecting: path, IOError(errnoCode: failure.code, reason: failure.step))
        case .connectionClosed: self = .connectionClosed
        case .replyTooLarge(let limit): self = .invalidReply("a reply longer than \(limit) bytes")
        case .invalidReply: self = .invalidReply("not a Varlink reply")
        }
    }
}
