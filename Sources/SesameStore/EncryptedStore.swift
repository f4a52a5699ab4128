import FoundationEssentials
import Logging
import SesameCore
import Synchronization

/// The token store: every account, its tokens and the last event sequence number, sealed in one
/// file in the state directory. Each change is appended to the file as a sealed record; the file
/// is rewritten whole, atomically, now and then (`StoreWriter`, `StoreFormat`).
public final class EncryptedStore: SessionPersistence {
    /// What to do when the store file is damaged (truncated, not a store, failing authentication).
    public enum DamagePolicy: String, Sendable, CaseIterable {
        /// Refuse to start; the file stays as it is for someone to look at.
        case refuse
        /// Rename the file to `<name>.damaged-<time>` and start with no accounts.
        case moveAside = "move-aside"
    }

    /// The file name inside the state directory.
    public static let fileName = "sessions.store"

    /// The store file's path.
    public let path: String
    /// Always locked before `writer` when both are.
    private let keys: Mutex<KeySources.Loaded>
    private let writer: Mutex<StoreWriter>
    private let mark: Mutex<SequenceMark>
    private let logger: Logger

    private init(keys: KeySources.Loaded, writer: StoreWriter, mark: SequenceMark, logger: Logger) {
        self.path = writer.path
        self.keys = Mutex(keys)
        self.writer = Mutex(writer)
        self.mark = Mutex(mark)
        self.logger = logger
    }

    /// The id of the key new writes are sealed with.
    public var keyID: String { keys.withLock { $0.primary.id } }

    /// Opens (or creates) the store in `directory` and returns it with the state it holds. A
    /// damaged file is refused or moved aside by `policy`; a wrong key or a newer format is
    /// always refused. The file is never overwritten or deleted because it could not be read.
    /// A store older than `sequenceFile`'s mark (by default beside the store) is refused as
    /// rolled back; a new store continues the mark's sequence numbers.
    public static func open(
        directory: String,
        keySources: KeySources,
        onDamage policy: DamagePolicy,
        sequenceFile: String? = nil,
        logger: Logger
    ) throws(StoreError) -> (EncryptedStore, SessionSnapshot) {
        let path = directory + "/" + fileName
        let mark = try SequenceMark(path: sequenceFile ?? path + ".sequence")
        let keys = try keySources.load(storeExists: FileManager.default.fileExists(atPath: path))
        if keys.isGenerated {
            logger.warning(
                "THE TOKEN STORE KEY IS A GENERATED DEVELOPMENT KEY kept beside the store; anyone who can read the state directory can read every token. Configure a systemd credential or key_file for real use.",
                metadata: ["key_file": "\(keys.keyFile ?? "")"]
            )
        }
        guard let found = try AtomicFile.openForUpdate(path) else {
            logger.info(
                "creating a new token store",
                metadata: ["path": "\(path)", "key_id": "\(keys.primary.id)", "key_source": "\(keys.primary.source)"]
            )
            return try empty(path: path, keys: keys, mark: mark, logger: logger)
        }
        guard let contents = try read(found.data, keys: keys, path: path, onDamage: policy, logger: logger) else {
            return try empty(path: path, keys: keys, mark: mark, logger: logger)
        }
        if let recorded = mark.recorded, contents.lastSequence < recorded {
            throw .rolledBack(path: path, sequence: contents.lastSequence, markPath: mark.path, mark: recorded)
        }
        let snapshot = contents.snapshot
        let writer = StoreWriter(path: path, contents: contents, file: found.file)
        let store = EncryptedStore(keys: keys, writer: writer, mark: mark, logger: logger)
        if contents.key.id != keys.primary.id { try store.finishKeyChange(to: contents.key, snapshot: snapshot) }
        store.rewriteIfNeeded(contents)
        // A record read through the page cache may be one a crashed sesamed wrote but never
        // synced: the mark may only vouch for what is on disk.
        if store.writer.withLock({ $0.sync() }) { store.advanceMark(to: snapshot.lastSequence) }
        logger.info(
            "opened the token store",
            metadata: [
                "path": "\(path)", "accounts": "\(snapshot.accounts.count)", "sequence": "\(snapshot.lastSequence)",
                "key_id": "\(store.keyID)", "key_source": "\(store.keys.withLock { $0.primary.source })",
            ]
        )
        return (store, snapshot)
    }

    /// The store file's contents, or nil when it was damaged and `policy` moved it aside.
    private static func read(
        _ data: Data,
        keys: KeySources.Loaded,
        path: String,
        onDamage policy: DamagePolicy,
        logger: Logger
    ) throws(StoreError) -> StoreContents? {
        do {
            return try decode(data, keys: keys, path: path)
        } catch let error where error.isDamagedFile && policy == .moveAside {
            let aside = path + ".damaged-" + Self.timestamp()
            try AtomicFile.move(path, to: aside)
            logger.error(
                "the token store is damaged; moved it aside and starting with no accounts",
                metadata: ["error": "\(error)", "moved_to": "\(aside)"]
            )
            return nil
        }
    }

    /// A store with no accounts, written at once so that the file exists and is sealed. Its
    /// sequence numbers continue from the mark's, so events keep growing across a lost store.
    private static func empty(
        path: String,
        keys: KeySources.Loaded,
        mark: SequenceMark,
        logger: Logger
    ) throws(StoreError) -> (EncryptedStore, SessionSnapshot) {
        let snapshot = SessionSnapshot(lastSequence: mark.recorded ?? 0)
        let writer = StoreWriter(path: path, key: keys.primary, lastSequence: snapshot.lastSequence)
        let store = EncryptedStore(keys: keys, writer: writer, mark: mark, logger: logger)
        try store.write(snapshot)
        return (store, snapshot)
    }

    /// Rewrites a file that cannot be appended to as it is: one in format 1, or one whose last
    /// record was cut short by a crash (its change was never acknowledged, so nothing is lost).
    /// If that fails (a full disk), the first change rewrites it, as after any failed write.
    private func rewriteIfNeeded(_ contents: StoreContents) {
        do {
            try keys.withLock { keys throws(StoreError) in
                try writer.withLock { writer throws(StoreError) in
                    guard writer.mustRewrite else { return }
                    try writer.rewrite(writer.snapshot, key: keys.primary)
                }
            }
        } catch {
            logger.error("could not rewrite the token store; the next change will", metadata: ["error": "\(error)"])
            return
        }
        if contents.version != StoreFormat.version {
            logger.notice(
                "rewrote the token store in format \(StoreFormat.version)",
                metadata: ["from_format": "\(contents.version)"]
            )
        } else if contents.tornBytes > 0 {
            logger.warning(
                "the token store ended in a change cut short by a crash, never acknowledged; dropped it",
                metadata: ["bytes": "\(contents.tornBytes)"]
            )
        }
    }

    /// The store was sealed with `usedKey`, not the primary key: the key a rekey was moving to,
    /// or the previous credential. Finishes the move, so the store and the primary key agree.
    private func finishKeyChange(to usedKey: StoreKey, snapshot: SessionSnapshot) throws(StoreError) {
        let current = keys.withLock { $0 }
        if let keyFile = current.keyFile {
            try AtomicFile.move(keyFile + ".next", to: keyFile)
            keys.withLock {
                $0 = KeySources.Loaded(primary: usedKey, others: [], isGenerated: current.isGenerated, keyFile: keyFile)
            }
            logger.notice("finished an interrupted rekey", metadata: ["key_id": "\(usedKey.id)"])
        } else {
            try write(snapshot)
            logger.notice(
                "re-sealed the token store under the current credential",
                metadata: ["from_key_id": "\(usedKey.id)", "key_id": "\(current.primary.id)"]
            )
        }
    }

    public func save(_ snapshot: SessionSnapshot) throws {
        try saveLogged(snapshot, changes: nil)
    }

    public func save(_ snapshot: SessionSnapshot, changes: [String: StoredAccount?]) throws {
        try saveLogged(snapshot, changes: changes)
    }

    /// Writes, and tells the administrator why a write failed: the caller only learns that it did.
    private func saveLogged(_ snapshot: SessionSnapshot, changes: [String: StoredAccount?]?) throws {
        do {
            try write(snapshot, changes: changes)
        } catch {
            // The caller only learns that saving failed; the reason is for the administrator.
            logger.error("could not save the token store; the change was not made", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// Seals the current state under a new key without a moment in which no key on disk opens
    /// the store: the new key is written beside the old one, the store is re-sealed, and only
    /// then does the new key replace the old. With a credential, whose replacement belongs to
    /// the administrator, the store is re-sealed under the current credential. Returns the key id.
    @discardableResult
    public func rekey() throws(StoreError) -> String {
        try keys.withLock { keys throws(StoreError) in
            try writer.withLock { writer throws(StoreError) in
                guard let keyFile = keys.keyFile else {
                    try writer.rewrite(writer.snapshot, key: keys.primary)
                    return keys.primary.id
                }
                let next = StoreKey.generate(source: keys.primary.source)
                try AtomicFile.write(next.fileContents, to: keyFile + ".next")
                try writer.rewrite(writer.snapshot, key: next)
                try AtomicFile.move(keyFile + ".next", to: keyFile)
                keys = KeySources.Loaded(primary: next, others: [], isGenerated: keys.isGenerated, keyFile: keyFile)
                return next.id
            }
        }
    }

    private func write(_ snapshot: SessionSnapshot, changes: [String: StoredAccount?]? = nil) throws(StoreError) {
        try keys.withLock { keys throws(StoreError) in
            try writer.withLock { writer throws(StoreError) in
                try writer.save(snapshot, changes: changes, key: keys.primary)
            }
        }
        advanceMark(to: snapshot.lastSequence)
    }

    /// Records `sequence` in the mark when it is higher. The store is already written by then,
    /// so a mark that cannot be written does not undo the change; it only leaves a rollback to
    /// this point unnoticed, which is said.
    private func advanceMark(to sequence: UInt64) {
        do {
            try mark.withLock { mark throws(StoreError) in
                guard (mark.recorded ?? 0) < sequence else { return }
                try mark.record(sequence)
            }
        } catch {
            logger.error(
                "could not record the store's sequence mark; a rollback to this point would go unnoticed",
                metadata: ["error": "\(error)"]
            )
        }
    }

    /// Opens sealed bytes with whichever configured key the header names.
    package static func decode(_ data: Data, keys: KeySources.Loaded, path: String) throws(StoreError)
        -> StoreContents
    {
        let header = try StoreFormat.header(of: data, path: path)
        guard let key = keys.all.first(where: { $0.id == header.keyID }) else {
            throw .wrongKey(path: path, storeKeyID: header.keyID, available: keys.all.map { "\($0.id) (\($0.source))" })
        }
        if header.version == StoreFormat.version { return try StoreLog.read(data, key: key, path: path) }
        let plaintext = try StoreFormat.openSingleBox(data, key: key, path: path)
        do {
            let snapshot = try JSONDecoder().decode(SessionSnapshot.self, from: plaintext)
            return StoreContents(
                accounts: [String: StoredAccount](byID: snapshot.accounts),
                lastSequence: snapshot.lastSequence,
                key: key,
                version: header.version
            )
        } catch {
            throw .undecodable(path: path, reason: "\(error)")
        }
    }

    private static func timestamp() -> String {
        Date().formatted(
            .iso8601.year().month().day().dateSeparator(.omitted).time(includingFractionalSeconds: false).timeSeparator(
                .omitted
            )
        )
    }
}
