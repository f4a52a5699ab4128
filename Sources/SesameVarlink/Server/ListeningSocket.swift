#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The socket a server accepts connections on: one it binds at a path, or one handed over
/// (by systemd), non-blocking either way, with as long a queue of connections not yet accepted
/// as the kernel allows.
enum ListeningSocket {
    /// Binds a Unix stream socket at `path` (which `UnixSocketPath.prepare` has cleared), gives
    /// the file `mode` and listens; the descriptor is the caller's to close.
    static func bind(path: String, mode: UInt32) throws(VarlinkEndpointError) -> Int32 {
        guard var address = UnixSocketPath.address(of: path) else {
            throw .systemCallFailed(call: "bind", path: path, errno: ENAMETOOLONG)
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .systemCallFailed(call: "socket", path: path, errno: errno) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bindAddress(descriptor, $0)
            }
        }
        do throws(VarlinkEndpointError) {
            guard bound == 0 else {
                throw VarlinkEndpointError.systemCallFailed(call: "bind", path: path, errno: errno)
            }
            try UnixSocketPath.setMode(path, mode: mode)
            try listen(on: descriptor, describedAs: path)
        } catch {
            close(descriptor)
            // A socket file bound but not served would only make the next start look in vain.
            if bound == 0 { unlink(path) }
            throw error
        }
        return descriptor
    }

    /// Makes an inherited listening socket ready to serve: non-blocking, and its queue raised
    /// to the kernel's bound (a unit's `Backlog=` may have asked for less).
    static func adopt(_ descriptor: Int32) throws(VarlinkEndpointError) {
        try listen(on: descriptor, describedAs: "inherited socket fd \(descriptor)")
    }

    /// Listens with the longest queue the kernel grants (it caps the request at
    /// `net.core.somaxconn`): a queue that fills turns a non-blocking connect away, and every
    /// caller waits in it in arrival order, so it is kept short by accepting fast
    /// (`ConnectionAcceptor`), not by making it small.
    private static func listen(on descriptor: Int32, describedAs name: String) throws(VarlinkEndpointError) {
        guard listenLongest(descriptor) == 0 else {
            throw .systemCallFailed(call: "listen", path: name, errno: errno)
        }
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw .systemCallFailed(call: "fcntl", path: name, errno: errno)
        }
    }
}

// The system calls under names the enum's own functions do not hide.
private func bindAddress(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>) -> Int32 {
    bind(descriptor, address, socklen_t(MemoryLayout<sockaddr_un>.size))
}

private func listenLongest(_ descriptor: Int32) -> Int32 {
    listen(descriptor, Int32.max)
}

extension UnixSocketPath {
    /// The socket address of `path`; nil when it does not fit `sun_path` with its terminating NUL.
    static func address(of path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        return address
    }
}
