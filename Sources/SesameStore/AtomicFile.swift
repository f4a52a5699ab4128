import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = path + ".tmp"
        if unlink(temporary) != 0 && errno != ENOENT {
            throw .io(operation: "remove the stale", path: temporary, errno: errno)
        }
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .io(operation: "create", path: temporary, errno: errno) }
        do throws(StoreError) {
            // Exactly 0600, whatever the umask or a default ACL of the directory made of it.
            guard fchmod(descriptor, 0o600) == 0 else { throw .io(operation: "chmod", path: temporary, errno: errno) }
            for part in parts { try writeAll(part, to: descriptor, path: temporary) }
            guard fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: temporary, errno: errno) }
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw .io(operation: "rename", path: path, errno: code)
        }
        try syncDirectory(directory)
    }

    /// Renames `source` to `target` and makes the rename durable.
    static func move(_ source: String, to target: String) throws(StoreError) {
        guard rename(source, target) == 0 else { throw .io(operation: "rename", path: source, errno: errno) }
        try syncDirectory((target as NSString).deletingLastPathComponent)
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

    private static func writeAll(_ data: Data, to descriptor: Int32, path: String) throws(StoreError) {
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return 0 }
                return Glibc.write(descriptor, base + offset, bytes.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "write", path: path, errno: errno)
            }
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
