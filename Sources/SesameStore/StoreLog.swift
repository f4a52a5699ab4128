import FoundationEssentials
import SesameCore

/// One change as a format-2 record after the first: the accounts added or changed, the ids of
/// those removed, and the sequence number the state has after it.
struct StoreChange: Codable {
    /// Accounts added or changed, each whole.
    var put: [StoredAccount]
    /// Ids of accounts removed.
    var removed: [String]
    /// The snapshot's `lastSequence` after the change.
    var lastSequence: UInt64

    /// What turns `saved` into `snapshot`.
    init(from saved: [String: StoredAccount], to snapshot: SessionSnapshot) {
        var present = 0
        var seen = Set<String>(minimumCapacity: snapshot.accounts.count)
        put = []
        for account in snapshot.accounts {
            let previous = saved[account.account.id]
            if previous != nil && seen.insert(account.account.id).inserted { present += 1 }
            if previous != account { put.append(account) }
        }
        if present < saved.count {
            let ids = Set(snapshot.accounts.map(\.account.id))
            removed = saved.keys.filter { !ids.contains($0) }.sorted()
        } else {
            removed = []
        }
        lastSequence = snapshot.lastSequence
    }

    /// `changes` (by id; nil: removed) as a change from `saved`, comparing only those accounts;
    /// nil when they do not account for `snapshot`'s number of accounts, so that they cannot be
    /// trusted.
    init?(changes: [String: StoredAccount?], to snapshot: SessionSnapshot, from saved: [String: StoredAccount]) {
        var count = saved.count
        put = []
        removed = []
        for (id, change) in changes {
            let previous = saved[id]
            switch (previous, change) {
            case (nil, let added?): put.append(added); count += 1
            case (_?, nil): removed.append(id); count -= 1
            case (let previous?, let changed?) where previous != changed: put.append(changed)
            default: break
            }
        }
        guard count == snapshot.accounts.count else { return nil }
        removed.sort()
        lastSequence = snapshot.lastSequence
    }

    /// Applies the change to `accounts`.
    func apply(to accounts: inout [String: StoredAccount]) {
        for id in removed { accounts[id] = nil }
        for account in put { accounts[account.account.id] = account }
    }
}

/// What a store file holds once opened: the state, the key that opened it, and where the next
/// record goes.
package struct StoreContents {
    /// Every account by id.
    var accounts: [String: StoredAccount]
    /// The last event sequence number.
    var lastSequence: UInt64
    /// The key the file was sealed with.
    var key: StoreKey
    /// The file's format version.
    var version: UInt16
    /// The position of the next record.
    var chain = StoreFormat.Chain()
    /// Where the last whole record ends: the next record is written here.
    var end = 0
    /// The size of record 0, the whole state as of the last rewrite.
    var baseBytes = 0
    /// The size of every record after it.
    var appendedBytes = 0
    /// Bytes after the last whole record: a record whose write was cut short by a crash.
    var tornBytes = 0

    /// These contents, the records read ending at `offset`.
    func ending(at offset: Int) -> StoreContents {
        var contents = self
        contents.end = offset
        return contents
    }

    /// The state as one snapshot.
    var snapshot: SessionSnapshot {
        SessionSnapshot(accounts: Array(accounts.values), lastSequence: lastSequence)
    }
}

/// Reads format-2 files: opens record after record, checking each against the chain, and
/// replays the changes onto the state of record 0.
enum StoreLog {
    /// Opens `data` (whose header names `key`) and replays it. A last record cut short (a
    /// whole header claiming more bytes than the file has, part of a header, or only zeros) is a
    /// crash during an append, whose change was never acknowledged: it is left out and counted in
    /// `tornBytes`. Anything else that does not authenticate or decode is refused.
    static func read(_ data: Data, key: StoreKey, path: String) throws(StoreError) -> StoreContents {
        let header = data.prefix(StoreFormat.headerSize)
        var contents = StoreContents(accounts: [:], lastSequence: 0, key: key, version: StoreFormat.version)
        var offset = StoreFormat.headerSize
        while offset < data.count {
            let box: Data
            switch record(in: data, at: offset) {
            case .whole(let whole):
                box = whole
            case .cutShort:
                if contents.chain.index == 0 { throw .truncated(path: path, bytes: data.count) }
                contents.tornBytes = data.count - offset
                return contents.ending(at: offset)
            case .damaged:
                throw .tampered(path: path)
            }
            let (plaintext, next) = try StoreFormat.openRecord(
                box,
                key: key,
                header: header,
                chain: contents.chain,
                path: path
            )
            try replay(plaintext, isBase: contents.chain.index == 0, onto: &contents, path: path)
            let size = StoreFormat.recordHeaderSize + box.count
            if contents.chain.index == 0 { contents.baseBytes = size } else { contents.appendedBytes += size }
            contents.chain = next
            offset += size
        }
        guard contents.chain.index > 0 else { throw .truncated(path: path, bytes: data.count) }
        return contents.ending(at: offset)
    }

    /// What the file holds at a record's place.
    private enum Record {
        /// A whole record: its sealed part (nonce, ciphertext, tag), to be authenticated.
        case whole(Data)
        /// The start of a record whose append a crash cut short.
        case cutShort
        /// A header whose length and complement disagree.
        case damaged
    }

    private static func record(in data: Data, at offset: Int) -> Record {
        let rest = data.dropFirst(offset)
        guard rest.count >= StoreFormat.recordHeaderSize else { return .cutShort }
        let length = bigEndian(rest.prefix(StoreFormat.lengthSize))
        let complement = bigEndian(rest.dropFirst(StoreFormat.lengthSize).prefix(StoreFormat.lengthSize))
        guard complement == ~length else { return rest.allSatisfy { $0 == 0 } ? .cutShort : .damaged }
        let box = rest.dropFirst(StoreFormat.recordHeaderSize)
        guard box.count >= Int(length) else { return .cutShort }
        return .whole(box.prefix(Int(length)))
    }

    private static func bigEndian(_ bytes: Data) -> UInt32 {
        bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    private static func replay(_ plaintext: Data, isBase: Bool, onto contents: inout StoreContents, path: String)
        throws(StoreError)
    {
        do {
            if isBase {
                let snapshot = try JSONDecoder().decode(SessionSnapshot.self, from: plaintext)
                contents.accounts = [String: StoredAccount](byID: snapshot.accounts)
                contents.lastSequence = snapshot.lastSequence
            } else {
                let change = try JSONDecoder().decode(StoreChange.self, from: plaintext)
                change.apply(to: &contents.accounts)
                contents.lastSequence = change.lastSequence
            }
        } catch {
            throw .undecodable(path: path, reason: "\(error)")
        }
    }
}

extension [String: StoredAccount] {
    /// `accounts` by id (the last of any repeated id).
    init(byID accounts: [StoredAccount]) {
        self.init(accounts.map { ($0.account.id, $0) }) { _, last in last }
    }
}
