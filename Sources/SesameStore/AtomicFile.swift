import FoundationEssentials
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An open file, closed when the last reference to it goes.
final class OpenFile: Sendable {
    /// Its descriptor.
    let descriptor: Int32

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }
}

/// Replaces files so that a crash at any moment leaves either the old contents or the new, never
/// a mix: write a temporary file in the same directory, fsync it, rename it over the target,
/// fsync the directory.
enum AtomicFile {
    /// Atomically replaces `path` with `data`, mode 0600. The temporary file is always a new
    /// one of sesamed's own: whatever is found under its name (left by a crash, or planted: a
    /// world-writable file, a symlink) is removed, never written through or kept with its mode.
    static func write(_ data: Data, to path: String) throws(StoreError) {
        try write([data], to: path)
    }

    /// Like `write(_:to:)`, the file being `parts` one after the other.
    static func write(_ parts: [Data], to path: String) throws(StoreError) {
        _ = try writeKeepingOpen(parts, to: path)
    }

    /// Like `write(_:to:)`, the file being `parts` one after the other, and returns the new file
    /// open for writing, so that records can be appended to it.
    static func writeKeepingOpen(_ parts: [Data], to path: String) throws(StoreError) -> OpenFile {
        let directory = FilePath(path).removingLastComponent().string
        let temporary = path + ".tmp"
        if unlink(temporary) != 0 && errno != ENOENT {
            throw .io(operation: "remove the stale", path: temporary, errno: errno)
        }
        let raw = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard raw >= 0 else { throw .io(operation: "create", path: temporary, errno: errno) }
        let file = OpenFile(raw)
        do throws(StoreError) {
            // Exactly 0600, whatever the umask or a default ACL of the directory made of it.
            guard fchmod(raw, 0o600) == 0 else { throw .io(operation: "chmod", path: temporary, errno: errno) }
            var offset = 0
            for part in parts {
                try writeAll(part, to: raw, at: offset, path: temporary)
                offset += part.count
            }
            guard fsync(raw) == 0 else { throw .io(operation: "fsync", path: temporary, errno: errno) }
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw .io(operation: "rename", path: path, errno: code)
        }
        try syncDirectory(directory)
        return file
    }

    /// Writes `data` at `offset` of the open file and makes it durable with fdatasync, which
    /// also makes the file's new size durable (fdatasync(2): metadata needed to read the data).
    static func writeDurably(_ data: Data, to file: OpenFile, at offset: Int, path: String) throws(StoreError) {
        try writeAll(data, to: file.descriptor, at: offset, path: path)
        guard fdatasync(file.descriptor) == 0 else { throw .io(operation: "fdatasync", path: path, errno: errno) }
    }

    /// The file at `path` with its contents, open for writing in place when it is sesamed's own
    /// as a fresh write would leave it (a regular file, owned by this user, mode 0600 or
    /// stricter, one link); nil when it does not exist. Any other file (a symbolic link, one
    /// restored with other owner or mode, one that cannot be opened for writing) is read only
    /// (`file` nil), and the first write replaces it with a file of sesamed's own.
    static func openForUpdate(_ path: String) throws(StoreError) -> (file: OpenFile?, data: Data)? {
        let raw = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard raw >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            guard [ELOOP, EACCES, EPERM, EROFS, ETXTBSY].contains(code) else {
                throw .io(operation: "open", path: path, errno: code)
            }
            return try read(path).map { (nil, $0) }
        }
        let file = OpenFile(raw)
        var status = stat()
        guard fstat(raw, &status) == 0 else { throw .io(operation: "fstat", path: path, errno: errno) }
        // A FIFO or a device would hang or flood the read: nothing sesamed writes is one.
        guard status.st_mode & S_IFMT == S_IFREG else { throw .io(operation: "use", path: path, errno: EINVAL) }
        let data: Data
        do {
            data = Data(try FileReader.contents(of: FileDescriptor(rawValue: raw)))
        } catch .system(let operation, let number) {
            throw .io(operation: operation, path: path, errno: number)
        } catch {
            throw .io(operation: "read", path: path, errno: EFBIG)
        }
        let isOwn = status.st_uid == geteuid() && status.st_nlink == 1 && status.st_mode & 0o077 == 0
        return (isOwn ? file : nil, data)
    }

    /// Renames `source` to `target` and makes the rename durable.
    static func move(_ source: String, to target: String) throws(StoreError) {
        guard rename(source, target) == 0 else { throw .io(operation: "rename", path: source, errno: errno) }
        try syncDirectory(FilePath(target).removingLastComponent().string)
    }

    /// The file's contents, or nil when it does not exist.
    static func read(_ path: String) throws(StoreError) -> Data? {
        do {
            return try FileReader.contents(of: path).map { Data($0) }
        } catch .system(let operation, let number) {
            throw .io(operation: operation, path: path, errno: number)
        } catch {
            throw .io(operation: "read", path: path, errno: EFBIG)
        }
    }

    private static func writeAll(_ data: Data, to descriptor: Int32, at start: Int, path: String) throws(StoreError) {
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return 0 }
                return pwrite(descriptor, base + offset, bytes.count - offset, off_t(start + offset))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "write", path: path, errno: errno)
            }
            guard written > 0 else { throw .io(operation: "write", path: path, errno: EIO) }
            offset += written
        }
    }

    private static func syncDirectory(_ directory: String) throws(StoreError) {
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(operation: "open", path: directory, errno: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: directory, errno: errno) }
    }
}
