import Glibc

/// A connect to a Unix stream socket that waits in the kernel for room in the listener's queue
/// of connections not yet accepted, instead of polling it.
///
/// A non-blocking connect meets a full queue with EAGAIN, and a client that retries after a pause
/// looks for room only at the moments it retries: while a local user connects and closes in a
/// tight loop, refilling the queue whenever the server accepts, those moments can go seconds
/// without room. A blocking connect sleeps on the listener's wait queue and is woken by every
/// accept (Linux `unix_stream_connect`, `unix_wait_for_peer`), so it tries each time room
/// appears, without spinning. `SO_SNDTIMEO` bounds the wait.
public enum QueuedConnect {
    /// How long a client waits for room while the server's listen queue is full, before it
    /// reports the server as busy.
    public static let busyPatience: Duration = .seconds(5)

    /// Connects to the socket at `path`, waiting at most `patience` for room in its queue; returns
    /// the connected descriptor, or throws the failing step and its errno (EAGAIN: still no room).
    /// Blocks the calling thread, so it belongs on a thread pool, not on a task's executor.
    public static func connectWaiting(
        unixSocketPath path: String,
        patience: Duration = busyPatience
    ) throws(ConnectError) -> CInt {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { throw ConnectError(code: ENAMETOOLONG, step: "connect") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }

        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ConnectError(code: errno, step: "socket") }
        var timeout = timeval(patience)
        guard setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0
        else {
            let code = errno
            close(descriptor)
            throw ConnectError(code: code, step: "setsockopt")
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            // EINTR leaves the connect under way in the kernel; it is reported as busy rather than
            // retried, because a second connect on the same socket would fail with EALREADY.
            let code = errno
            close(descriptor)
            throw ConnectError(code: code == EINTR ? EAGAIN : code, step: "connect")
        }
        return descriptor
    }
}

/// A connect that failed: the system call that failed and its errno.
public struct ConnectError: Error, Sendable, Equatable {
    /// The errno the call failed with.
    public var code: CInt
    /// The system call that failed (`socket`, `setsockopt`, `connect`).
    public var step: String

    /// The failure of `step` with `code`.
    public init(code: CInt, step: String) {
        self.code = code
        self.step = step
    }
}

extension timeval {
    /// A `timeval` as long as `duration` (whole microseconds), for socket timeouts.
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}
