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
    let bytes = Data(input.remaining)
    let keys = KeySources.Loaded(primary: key, others: [], isGenerated: false, keyFile: nil)
    do {
        switch mode {
        case 0:
            _ = try EncryptedStore.decode(bytes, keys: keys, path: "sessions.store")
        case 1:
            // Records are split at ASCII RS (0x1E), which JSON never holds unescaped.
            let records = bytes.split(separator: 0x1e, omittingEmptySubsequences: false).map { Data($0) }
            let sealed = try StoreFormat.seal(records: records, key: key)
            _ = try EncryptedStore.decode(sealed, keys: keys, path: "sessions.store")
        default:
            _ = try StoreKey.parse(bytes, source: "fuzz")
        }
    } catch {
        // What the administrator reads when the store or key is refused must describe itself.
        _ = "\(error)"
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
