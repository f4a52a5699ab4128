import Glibc

/// Whether a program file may be run in this process's place: no other user can have put it
/// there or can swap it. sesamectl is often copied alone into a shared directory (`/tmp`, the
/// far side of a share), and what lies beside it there may be anyone's.
enum ProgramTrust {
    /// Why the program at `path` (absolute) may not be run by `caller`, or nil when it may: every
    /// entry on the way to it, each symlink and the directories and file it leads to, must be
    /// owned by root or by the caller, and the directories and the file writable by neither
    /// group nor others (as sshd's StrictModes asks of a user's files). A sticky directory (`/tmp`) may
    /// be writable by all, since others can add names to it but cannot replace or remove the
    /// caller's. The path is resolved one entry at a time, as it is checked, so that a link
    /// another user owns is never followed; `resolved` gets the path to run.
    static func distrust(of path: [UInt8], caller: uid_t, resolved: inout [UInt8]) -> String? {
        var pending = entries(of: path)
        var current: [UInt8] = []
        var links = 0
        if let reason = distrust(ofEntry: [UInt8(ascii: "/")], caller: caller) { return reason }
        while let name = pending.popLast() {
            if name.isEmpty || name == [UInt8(ascii: ".")] { continue }
            if name == Array("..".utf8) {
                current = Array(current[..<(current.lastIndex(of: UInt8(ascii: "/")) ?? 0)])
                continue
            }
            let next = current + [UInt8(ascii: "/")] + name
            if let reason = distrust(ofEntry: next, caller: caller) { return reason }
            guard let target = linkTarget(next) else {
                current = next
                continue
            }
            links += 1
            guard links <= 40 else { return "\(text(path)): \(String(cString: strerror(ELOOP)))" }
            if target.first == UInt8(ascii: "/") { current = [] }
            pending += entries(of: target)
        }
        guard pending.isEmpty, isRegularFile(current) else { return "\(text(current)) is not a regular file" }
        resolved = current
        return nil
    }

    /// The names in `path`, last first, to be taken from the end.
    private static func entries(of path: [UInt8]) -> [[UInt8]] {
        path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map(Array.init).reversed()
    }

    /// Why one entry is not to be trusted (unless it is a symlink, whose mode says nothing), or nil.
    private static func distrust(ofEntry path: [UInt8], caller: uid_t) -> String? {
        var status = stat()
        guard withCString(path, { lstat($0, &status) }) == 0 else {
            return "\(text(path)): \(String(cString: strerror(errno)))"
        }
        if status.st_uid != 0 && status.st_uid != caller {
            return "\(text(path)) belongs to uid \(status.st_uid), neither root nor you"
        }
        let kind = status.st_mode & S_IFMT
        // Group write too: a primary group may be shared (`users`), and whether it is cannot be
        // told from here without the user database.
        let othersMayWrite = status.st_mode & (S_IWGRP | S_IWOTH) != 0
        let stickyDirectory = kind == S_IFDIR && status.st_mode & S_ISVTX != 0
        if kind != S_IFLNK && othersMayWrite && !stickyDirectory {
            return "\(text(path)) may be written by others than its owner"
        }
        return nil
    }

    /// What the symlink at `path` points to; nil when it is not a symlink.
    private static func linkTarget(_ path: [UInt8]) -> [UInt8]? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = withCString(path) { readlink($0, &buffer, buffer.count - 1) }
        guard length >= 0 else { return nil }
        return buffer[..<length].map { UInt8(bitPattern: $0) }
    }

    private static func isRegularFile(_ path: [UInt8]) -> Bool {
        var status = stat()
        return withCString(path, { lstat($0, &status) }) == 0 && status.st_mode & S_IFMT == S_IFREG
    }

    /// A path for a message: a directory's name need not be UTF-8.
    static func text(_ path: [UInt8]) -> String { String(decoding: path, as: UTF8.self) }

    /// Calls `body` with `bytes` as a NUL-terminated C string.
    static func withCString<Result>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        (bytes + [0]).withUnsafeBufferPointer { buffer in
            // The buffer holds at least the NUL, so it has a base address.
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
