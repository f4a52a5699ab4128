import Foundation
import Logging
import SesameStore

/// An encrypted store with a generated key, in a directory of its own that `remove` deletes:
/// for tests of what needs a real store (Admin, the daemon's interfaces).
struct TemporaryStore {
    let store: EncryptedStore
    let directory: String

    /// Opens a new store in a new temporary directory.
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        (store, _) = try EncryptedStore.open(
            directory: directory,
            keySources: KeySources(credentialsDirectory: nil, keyFile: nil, generatedKeyFile: directory + "/dev.key"),
            onDamage: .refuse,
            logger: Logger(label: "test")
        )
    }

    /// Deletes the directory and the store in it.
    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
