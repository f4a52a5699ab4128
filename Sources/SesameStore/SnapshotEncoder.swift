import FoundationEssentials
import SesameCore

/// Encodes snapshots into the store's plaintext, re-encoding only the accounts that changed
/// since the previous snapshot; the others are copied as they were encoded last time.
///
/// The output is the document `JSONEncoder` makes of a `SessionSnapshot` (`{"accounts":[…],
/// "lastSequence":N}`, each account encoded by the same encoder), so reading is unchanged. Why:
/// encoding every account again made one change to a store of 1,000 accounts cost about 15 ms,
/// 70% of it in `JSONEncoder`, and the cost grew with every account (as profiled).
struct SnapshotEncoder {
    private struct Encoded {
        var account: StoredAccount
        var json: Data
    }

    /// Each account's JSON as last written, by account id.
    private var encoded: [String: Encoded] = [:]
    /// The memory the whole JSON is put together in, kept from one save to the next: fresh
    /// megabytes each time cost a page fault per page, a quarter of a save's time in a profile.
    private(set) var plaintext = Data()

    /// Hands the snapshot's JSON to `body`, then wipes it (it holds every token in the clear).
    /// `body` must not keep the bytes; what it returns (the sealed store) is returned.
    mutating func withEncoded<Result>(_ snapshot: SessionSnapshot, _ body: (Data) throws -> Result) throws -> Result {
        try assemble(snapshot)
        defer { plaintext.resetBytes(in: 0..<plaintext.count) }
        return try body(plaintext)
    }

    /// The snapshot's JSON, as a copy of its own (for tests).
    mutating func encode(_ snapshot: SessionSnapshot) throws -> Data {
        try withEncoded(snapshot) { Data($0) }
    }

    /// Puts the snapshot's JSON together in `plaintext`; accounts equal to the ones last encoded
    /// are not encoded again.
    private mutating func assemble(_ snapshot: SessionSnapshot) throws {
        let encoder = JSONEncoder()
        var next: [String: Encoded] = [:]
        next.reserveCapacity(snapshot.accounts.count)
        var parts: [Data] = []
        parts.reserveCapacity(snapshot.accounts.count)
        for account in snapshot.accounts {
            let id = account.account.id
            let json: Data
            if let previous = encoded[id], previous.account == account {
                json = previous.json
            } else {
                json = try encoder.encode(account)
            }
            next[id] = Encoded(account: account, json: json)
            parts.append(json)
        }
        let head = Data(#"{"accounts":["#.utf8)
        let tail = Data(#"],"lastSequence":\#(snapshot.lastSequence)}"#.utf8)
        plaintext.removeAll(keepingCapacity: true)
        plaintext.reserveCapacity(head.count + tail.count + parts.reduce(parts.count) { $0 + $1.count })
        plaintext.append(head)
        for (index, part) in parts.enumerated() {
            if index > 0 { plaintext.append(UInt8(ascii: ",")) }
            plaintext.append(part)
        }
        plaintext.append(tail)
        encoded = next
    }
}
