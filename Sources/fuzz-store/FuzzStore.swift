import Foundation
import SesameFuzzing
import SesameStore

/// The one key every input is sealed with or checked against.
private let key = try? StoreKey(bytes: [UInt8](repeating: 7, count: 32), source: "fuzz")

/// Reads the input the way the store reads what it finds on disk, as chosen by the first byte:
/// a store file as found (header, key id, records, authentication), the plaintexts a store
/// file's records carry once opened (split at 0x1E and sealed here with the right key, so the
/// snapshot and change decoders behind the seal are reached), or a key file's contents.
func fuzzStore(_ buffer: UnsafeRawBufferPointer) {
    guard let key else { preconditionFailure("a 32-byte key is always usable") }
    var input = FuzzInput(buffer)
    let mode = input.choice(3)
    let bytes = input.remaining
    let keys = KeySources.Loaded(primary: key, others: [], isGenerated: false, keyFile: nil)
    do {
        switch mode {
        case 0:
            _ = try EncryptedStore.decode(Data(bytes), keys: keys, path: "sessions.store")
        case 1:
            let sealed = try StoreFormat.seal(records: reachableRecords(bytes), key: key)
            _ = try EncryptedStore.decode(sealed, keys: keys, path: "sessions.store")
        default:
            _ = try StoreKey.parse(Data(bytes), source: "fuzz")
        }
    } catch {
        // What the administrator reads when the store or key is refused must describe itself.
        _ = "\(error)"
    }
}

/// The records `bytes` holds, split at ASCII RS (0x1E, which JSON never holds unescaped), up to
/// and including the first that is not a JSON object. The store stops reading at a record that
/// does not decode, and a snapshot or change is a JSON object, so the records after it are never
/// opened: sealing them (a random nonce and a ChaCha20-Poly1305 pass each) was most of the
/// target's own time, for inputs the fuzzer fills with hundreds of separators.
private func reachableRecords(_ bytes: [UInt8]) -> [Data] {
    let decoder = JSONDecoder()
    var records: [Data] = []
    var start = bytes.startIndex
    while true {
        let end = bytes[start...].firstIndex(of: 0x1e) ?? bytes.endIndex
        let record = Data(bytes[start..<end])
        records.append(record)
        guard end < bytes.endIndex, (try? decoder.decode(JSONObject.self, from: record)) != nil else { return records }
        start = end + 1
    }
}

/// Decodes from any JSON object, whatever its members: what every record's type needs first.
private struct JSONObject: Decodable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: Key.self)
    }
}

/// Runs the target under libFuzzer (scripts/fuzz) or over corpus files.
@main
enum FuzzStoreMain {
    static func main() {
        FuzzMain.run { data, size in
            fuzzStore(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
    }
}
