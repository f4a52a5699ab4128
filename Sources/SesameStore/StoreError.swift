/// Why the token store could not be opened or written. Each case names what a person must look
/// at; none carries token material or key bytes.
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file is shorter than any store can be.
    case truncated(path: String, bytes: Int)
    /// The file does not start with the store's magic bytes.
    case notAStore(path: String)
    /// The file was written by a newer Sesame; it is not guessed at.
    case unsupportedVersion(path: String, found: UInt16, supported: UInt16)
    /// The file was sealed with a key that none of the configured sources holds.
    case wrongKey(path: String, storeKeyID: String, available: [String])
    /// Authentication failed: the file was altered or damaged after it was written.
    case tampered(path: String)
    /// The contents authenticated but do not decode; a bug, or a file from an incompatible build.
    case undecodable(path: String, reason: String)
    /// No key source produced a key.
    case noKey(tried: [String])
    /// A key source exists but cannot be used.
    case unusableKey(source: String, reason: String)
    /// A system call on the store's files failed.
    case io(operation: String, path: String, errno: Int32)
    /// The store is older than the last one written: its sequence number is below the mark's.
    case rolledBack(path: String, sequence: UInt64, markPath: String, mark: UInt64)
    /// The sequence mark's file is not one.
    case badSequenceMark(path: String)
    /// Another process holds the state directory's lock: another sesamed uses the store.
    case inUse(path: String)

    public var description: String {
        switch self {
        case .truncated(let path, let bytes):
            "\(path) is truncated (\(bytes) bytes); it was not changed"
        case .notAStore(let path):
            "\(path) is not a Sesame token store; it was not changed"
        case .unsupportedVersion(let path, let found, let supported):
            "\(path) has store format \(found), but this sesamed reads formats up to \(supported); it was not changed"
        case .wrongKey(let path, let storeKeyID, let available):
            "\(path) was sealed with key \(storeKeyID), but the configured keys are \(available.joined(separator: ", "))"
        case .tampered(let path):
            "\(path) fails authentication: it was altered or damaged; it was not changed"
        case .undecodable(let path, let reason):
            "\(path) authenticated but does not decode (\(reason)); it was not changed"
        case .noKey(let tried):
            "no key for the token store; tried \(tried.joined(separator: ", ")). Give one as the systemd "
                + "credential sesame.key (make-credential key) or as [store] key_file, 64 random hex digits "
                + "readable by sesamed's user only (make-credential key-file)"
        case .unusableKey(let source, let reason):
            "the store key from \(source) cannot be used: \(reason)"
        case .io(let operation, let path, let code):
            "\(operation) \(path): \(String(cString: strerror(code)))"
        case .rolledBack(let path, let sequence, let markPath, let mark):
            "\(path) is older than the last store written (event sequence \(sequence), but \(markPath) records "
                + "\(mark)): it was restored or replaced; it was not changed. If that was intended, delete \(markPath)"
        case .badSequenceMark(let path):
            "\(path) is not a store sequence mark; it was not changed"
        case .inUse(let path):
            "another sesamed is using the state directory \(path) (it holds its lock); stop it, or give this one a "
                + "state directory of its own"
        }
    }

    /// Whether the file itself is damaged (as opposed to a key or version problem), which is
    /// the only case where moving it aside and starting empty can be right.
    public var isDamagedFile: Bool {
        switch self {
        case .truncated, .notAStore, .tampered, .undecodable: true
        default: false
        }
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
