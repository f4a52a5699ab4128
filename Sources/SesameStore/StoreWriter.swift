import FoundationEssentials
import SesameCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes the store file. A change is appended as one sealed record of what it changed and made
/// durable with one fdatasync (the sequence mark takes one more), so its cost follows the size of the change, not of the store
/// (re-sealing 1,000 accounts cost 6–7 ms per change). The whole state is sealed into
/// a fresh file, atomically replacing the old one, when the appended records outgrow the state
/// itself, when the key changes, and after any failed write, whose effect on the old file is
/// unknown. So reading the file at start-up costs at most about twice the state.
struct StoreWriter {
    /// Appended records may grow to the size of the state, or to this for a small state, before
    /// the state is rewritten.
    static let minimumAppendedBytes = 256 << 10

    /// The store file's path.
    let path: String
    /// The key the file is sealed with.
    private(set) var key: StoreKey
    /// Every account as written, by id.
    private var accounts: [String: StoredAccount]
    /// The sequence number as written.
    private var lastSequence: UInt64
    /// The file, open for appending; nil when the next save must rewrite it.
    private var file: OpenFile?
    /// The position of the next record, and where in the file it goes.
    private var chain = StoreFormat.Chain()
    private var end = 0
    private var baseBytes = 0
    private var appendedBytes = 0
    /// Keeps each account's JSON from one rewrite to the next.
    private var encoder = SnapshotEncoder()

    /// A writer for a store not written yet: the first save writes the whole file.
    init(path: String, key: StoreKey, lastSequence: UInt64) {
        self.path = path
        self.key = key
        self.accounts = [:]
        self.lastSequence = lastSequence
    }

    /// A writer that appends to `file`, which holds `contents`. A file in format 1, with a torn
    /// last record, or not open (`file` nil) is rewritten by the first save.
    init(path: String, contents: StoreContents, file: OpenFile?) {
        self.path = path
        self.key = contents.key
        self.accounts = contents.accounts
        self.lastSequence = contents.lastSequence
        guard contents.version == StoreFormat.version, contents.tornBytes == 0 else { return }
        self.file = file
        self.chain = contents.chain
        self.end = contents.end
        self.baseBytes = contents.baseBytes
        self.appendedBytes = contents.appendedBytes
    }

    /// The state as written.
    var snapshot: SessionSnapshot {
        SessionSnapshot(accounts: Array(accounts.values), lastSequence: lastSequence)
    }

    /// Whether the file must be rewritten before a change can be appended to it.
    var mustRewrite: Bool { file == nil }

    /// Makes what the file holds durable; false when there is no file to append to (it is to be
    /// rewritten) or syncing fails.
    func sync() -> Bool {
        guard let file else { return false }
        return fdatasync(file.descriptor) == 0
    }

    /// The descriptor appended to (for tests).
    var fileDescriptor: Int32? { file?.descriptor }

    private var appendLimit: Int { max(baseBytes, Self.minimumAppendedBytes) }

    /// Makes `snapshot` the stored state, sealed with `primary`: appended as one change when
    /// the file allows it, else written whole. `changes`, when given, are how `snapshot`
    /// differs from the state written (by account id; nil: removed); without them, or when they
    /// do not add up to `snapshot`, every account is compared.
    mutating func save(_ snapshot: SessionSnapshot, changes: [String: StoredAccount?]? = nil, key primary: StoreKey)
        throws(StoreError)
    {
        guard let file, primary.id == key.id else { return try rewrite(snapshot, key: primary) }
        let change =
            changes.flatMap { StoreChange(changes: $0, to: snapshot, from: accounts) }
            ?? StoreChange(from: accounts, to: snapshot)
        if change.put.isEmpty && change.removed.isEmpty && change.lastSequence == lastSequence { return }
        var plaintext: Data
        do {
            plaintext = try JSONEncoder().encode(change)
        } catch {
            throw .undecodable(path: path, reason: "could not encode: \(error)")
        }
        defer { plaintext.resetBytes(in: 0..<plaintext.count) }  // every changed token, in the clear
        let size = StoreFormat.recordHeaderSize + StoreFormat.minimumBoxSize + plaintext.count
        guard appendedBytes + size <= appendLimit else { return try rewrite(snapshot, key: primary) }
        let record = try seal(plaintext, header: StoreFormat.header(keyID: key.idBytes))
        do {
            try AtomicFile.writeDurably(record.bytes, to: file, at: end, path: path)
        } catch {
            // Part of the record may be in the file, and after a failed fdatasync the kernel's
            // view of it is unknown: the next save starts a new file rather than append to it.
            self.file = nil
            throw error
        }
        change.apply(to: &accounts)
        lastSequence = change.lastSequence
        chain = record.next
        end += record.bytes.count
        appendedBytes += record.bytes.count
    }

    /// Writes the whole of `snapshot` sealed with `key` as a new file, replacing the old one
    /// atomically, and appends to the new file from then on.
    mutating func rewrite(_ snapshot: SessionSnapshot, key: StoreKey) throws(StoreError) {
        let header = StoreFormat.header(keyID: key.idBytes)
        self.file = nil
        let record: (bytes: Data, next: StoreFormat.Chain)
        do {
            record = try encoder.withEncoded(snapshot) {
                try StoreFormat.sealRecord($0, key: key, header: header, chain: StoreFormat.Chain())
            }
        } catch {
            throw .undecodable(path: path, reason: "could not seal: \(error)")
        }
        let file = try AtomicFile.writeKeepingOpen([header, record.bytes], to: path)
        self.file = file
        self.key = key
        accounts = [String: StoredAccount](byID: snapshot.accounts)
        lastSequence = snapshot.lastSequence
        chain = record.next
        baseBytes = record.bytes.count
        end = header.count + baseBytes
        appendedBytes = 0
    }

    private func seal(_ plaintext: Data, header: Data) throws(StoreError) -> (bytes: Data, next: StoreFormat.Chain) {
        do {
            return try StoreFormat.sealRecord(plaintext, key: key, header: header, chain: chain)
        } catch {
            throw .undecodable(path: path, reason: "could not seal: \(error)")
        }
    }
}
