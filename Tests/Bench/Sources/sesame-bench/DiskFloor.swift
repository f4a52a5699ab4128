import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The floor of a persisted change: the least making a change durable costs on the same file
/// system, one write of its bytes at the end of a file and an fdatasync. (Before the store
/// appended changes, the floor was a durable replacement of a file the size of the store:
/// `atomicWrites`.)
enum DiskFloor {
    /// The p50 in ms of `count` appends of `bytes` bytes to a file in `directory`, each followed
    /// by fdatasync.
    static func appends(directory: String, bytes: Int, count: Int) throws -> Double {
        let data = [UInt8](repeating: 0x5a, count: max(bytes, 1))
        let path = directory + "/floor.log"
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        guard file >= 0 else { throw BenchError("cannot create \(path)") }
        defer {
            close(file)
            unlink(path)
        }
        let clock = ContinuousClock()
        var samples: [Double] = []
        for _ in 0..<count {
            var failed = false
            let elapsed = clock.measure {
                let written = data.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
                failed = written != data.count || fdatasync(file) != 0
            }
            guard !failed else { throw BenchError("cannot append to \(path)") }
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
        }
        return Samples.median(samples) ?? 0
    }

    /// The p50 in ms of `count` atomic replacements of a `bytes`-byte file in `directory`.
    static func atomicWrites(directory: String, bytes: Int, count: Int) throws -> Double {
        let data = [UInt8](repeating: 0x5a, count: max(bytes, 1))
        let path = directory + "/floor.store"
        let clock = ContinuousClock()
        var samples: [Double] = []
        for _ in 0..<count {
            let elapsed = try clock.measure { try replace(path, with: data) }
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
        }
        return Samples.median(samples) ?? 0
    }

    /// Replaces `path` with `data` durably.
    private static func replace(_ path: String, with data: [UInt8]) throws {
        let temporary = path + ".tmp"
        let file = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard file >= 0 else { throw BenchError("cannot create \(temporary)") }
        let written = data.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        let synced = fsync(file)
        close(file)
        guard written == data.count, synced == 0, rename(temporary, path) == 0 else {
            throw BenchError("cannot replace \(path)")
        }
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw BenchError("cannot open the directory of \(path)") }
        defer { close(directory) }
        guard fsync(directory) == 0 else { throw BenchError("cannot fsync the directory of \(path)") }
    }

    /// The size of the file at `path` in bytes (0 if missing).
    static func size(of path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}
