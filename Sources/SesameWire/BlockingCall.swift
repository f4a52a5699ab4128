import Glibc

/// One Varlink call on a connection of its own, made with blocking system calls on the calling
/// thread: for a program that makes a single call and exits (`sesamectl token`), which then starts
/// no event loop and none of its threads, the larger part of such a program's run. It needs
/// nothing but the C library, so such a program can be linked of this module alone.
public enum BlockingCall {
    /// Calls `method` with `parameters` on the service at `path` and returns its reply, checked
    /// by the same scan sesamed checks every call with; an error reply is returned, not thrown
    /// (`ScannedReply.error`). Blocks the calling thread until the reply has come.
    public static func call(
        _ method: String,
        parameters: [String: JSONValue] = [:],
        unixSocketPath path: String,
        maximumMessageSize: Int = 16 << 20
    ) throws(BlockingCallError) -> ScannedReply {
        let received = try exchange(
            frame(method, parameters: parameters),
            unixSocketPath: path,
            maximumMessageSize: maximumMessageSize
        )
        guard let reply = ScannedReply(received) else { throw .invalidReply }
        return reply
    }

    /// A call's whole message, its NUL included: `{"method":…,"parameters":{…}}` (Varlink's call
    /// envelope, with neither `more` nor `oneway`, for one call that wants one reply), written
    /// as the wire's encoder writes it: no `parameters` member when there are none.
    public static func frame(_ method: String, parameters: [String: JSONValue]) -> [UInt8] {
        var envelope: [String: JSONValue] = ["method": .string(method)]
        if !parameters.isEmpty { envelope["parameters"] = .object(parameters) }
        var text: [UInt8] = []
        JSONValue.object(envelope).appendCompactText(to: &text)
        return text + [0]
    }

    /// Sends `frame` (one whole message, its NUL included) to the service at `path` and returns
    /// the first reply without its NUL. Blocks the calling thread until the reply has come.
    public static func exchange(
        _ frame: [UInt8],
        unixSocketPath path: String,
        maximumMessageSize: Int = 16 << 20
    ) throws(BlockingCallError) -> [UInt8] {
        let descriptor: CInt
        do {
            descriptor = try QueuedConnect.connectWaiting(unixSocketPath: path)
        } catch {
            throw .cannotConnect(error)
        }
        defer { close(descriptor) }
        try send(frame, to: descriptor)
        return try receive(from: descriptor, limit: maximumMessageSize)
    }

    /// Writes all of `frame`, retrying after signals and short writes. MSG_NOSIGNAL: a program
    /// making one call starts no event loop, so nothing set SIGPIPE aside, and a peer that has
    /// closed (a share that ended) would end the program without a word instead of failing the call.
    public static func send(_ frame: [UInt8], to descriptor: CInt) throws(BlockingCallError) {
        var offset = 0
        while offset < frame.count {
            let written = frame.withUnsafeBytes { bytes in
                let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                return Glibc.send(descriptor, rest.baseAddress, rest.count, CInt(MSG_NOSIGNAL))
            }
            if written < 0 {
                guard errno == EINTR else { throw .connectionClosed }
                continue
            }
            offset += written
        }
    }

    /// Reads up to the NUL that ends the first reply, and returns the reply without it; refuses
    /// to hold more than `limit` bytes of it, so a peer cannot make the program allocate without bound.
    /// (The same cut as VarlinkFrameDecoder's, which works on NIO's buffers, not linked here.)
    private static func receive(from descriptor: CInt, limit: Int) throws(BlockingCallError) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .connectionClosed }
            if let nul = chunk[..<count].firstIndex(of: 0) {
                guard received.count + nul <= limit else { throw .replyTooLarge(limit: limit) }
                return received + chunk[..<nul]
            }
            received += chunk[..<count]
            guard received.count <= limit else { throw .replyTooLarge(limit: limit) }
        }
    }
}

/// Why a blocking call got no reply.
public enum BlockingCallError: Error, Sendable, Equatable {
    /// The connect failed (EAGAIN: the listen queue stayed full for `QueuedConnect.busyPatience`).
    case cannotConnect(ConnectError)
    /// The peer closed before the whole reply came.
    case connectionClosed
    /// The reply went on past `limit` bytes without its NUL.
    case replyTooLarge(limit: Int)
    /// What came back is not a Varlink reply (not a JSON object, or not one the scan accepts).
    case invalidReply
}
