import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reads a whole file with read(2), so `/dev/null` and pipes work as well as regular files,
/// retrying reads interrupted by a signal (EINTR): the one read loop of the daemon.
public enum FileReader {
    /// Why a file could not be read.
    public enum ReadError: Error, Sendable, Equatable {
        /// A system call failed.
        case system(operation: String, errno: Int32)
        /// The file is longer than the caller accepts.
        case tooLarge(limit: Int)
    }

    /// The file's bytes, or nil when it does not exist; more than `limit` bytes is `tooLarge`.
    public static func contents(of path: String, limit: Int = .max) throws(ReadError) -> [UInt8]? {
        try contentsAndStatus(of: path, limit: limit)?.bytes
    }

    /// The file's bytes and the status of the very file read (`fstat` of the open descriptor),
    /// so that what a caller checks (owner, mode) is what it got, not what the path names a
    /// moment later; nil when the file does not exist.
    public static func contentsAndStatus(of path: String, limit: Int = .max) throws(ReadError)
        -> (bytes: [UInt8], status: stat)?
    {
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: .closeOnExec)
        } catch let error as Errno {
            if error == .noSuchFileOrDirectory { return nil }
            throw .system(operation: "open", errno: error.rawValue)
        } catch {
            throw .system(operation: "open", errno: Errno.ioError.rawValue)
        }
        defer { try? descriptor.close() }
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0 else { throw .system(operation: "fstat", errno: errno) }
        return (try read(descriptor, limit: limit), status)
    }

    /// Everything left to read from an open file.
    static func contents(of descriptor: FileDescriptor) throws(ReadError) -> [UInt8] {
        try read(descriptor, limit: .max)
    }

    private static func read(_ descriptor: FileDescriptor, limit: Int) throws(ReadError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count: Int
            do {
                count = try chunk.withUnsafeMutableBytes { try descriptor.read(into: $0, retryOnInterrupt: true) }
            } catch let error as Errno {
                throw .system(operation: "read", errno: error.rawValue)
            } catch {
                throw .system(operation: "read", errno: Errno.ioError.rawValue)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
            if bytes.count > limit { throw .tooLarge(limit: limit) }
        }
    }
}
