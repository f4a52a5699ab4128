#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a Varlink server listens.
public enum VarlinkEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Bind a Unix socket at `path` and give it file mode `mode` (e.g. `0o666`).
    case path(String, mode: UInt32)
    /// Serve on a socket that is already bound and listening, such as one handed over by systemd.
    case inheritedSocket(descriptor: Int32)

    public var description: String {
        switch self {
        case .path(let path, let mode): "unix:\(path) (mode \(String(mode, radix: 8)))"
        case .inheritedSocket(let descriptor): "inherited socket fd \(descriptor)"
        }
    }
}

/// Why a socket path could not be prepared for binding.
public enum VarlinkEndpointError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another process accepts connections on the path, so it is not stale.
    case alreadyInUse(path: String)
    /// Something other than a socket exists at the path; it is left alone.
    case notASocket(path: String)
    /// A system call failed while preparing the path.
    case systemCallFailed(call: String, path: String, errno: Int32)

    public var description: String {
        switch self {
        case .alreadyInUse(let path):
            "another process is already serving on \(path)"
        case .notASocket(let path):
            "\(path) exists and is not a socket; refusing to replace it"
        case .systemCallFailed(let call, let path, let code):
            "\(call) failed for \(path): \(String(cString: strerror(code)))"
        }
    }
}

/// A file's identity on this machine.
public struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}

/// File-system chores around a socket path: parent directory, stale sockets and file mode.
public enum UnixSocketPath {
    /// Creates the parent directory if needed and removes a socket left behind by a process that
    /// is gone; a socket someone still listens on is an error, not something to steal.
    public static func prepare(_ path: String) throws(VarlinkEndpointError) {
        try makeParentDirectory(of: path)
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw .systemCallFailed(call: "lstat", path: path, errno: errno)
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
        if isAcceptingConnections(path) { throw .alreadyInUse(path: path) }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw .systemCallFailed(call: "unlink", path: path, errno: errno)
        }
    }

    /// Sets the socket file's mode; `bind` applies the umask, so the mode is set afterwards.
    static func setMode(_ path: String, mode: UInt32) throws(VarlinkEndpointError) {
        guard chmod(path, mode_t(mode)) == 0 else {
            throw .systemCallFailed(call: "chmod", path: path, errno: errno)
        }
    }

    /// Which file a path names now (device and inode), to tell our socket from a later one.
    public static func identity(of path: String) -> FileIdentity? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// Removes the socket at `path` if it is still the one we bound; a newer daemon's is left alone.
    public static func remove(_ path: String, ifStill identity: FileIdentity) {
        if Self.identity(of: path) == identity {
            unlink(path)
        }
    }

    private static func makeParentDirectory(of path: String) throws(VarlinkEndpointError) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let parent = String(path[..<slash])
        var prefix = parent.hasPrefix("/") ? "" : "."
        for component in parent.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw .systemCallFailed(call: "mkdir", path: prefix, errno: errno)
            }
        }
    }

    private static func isAcceptingConnections(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard var address = address(of: path) else { return false }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }
}
