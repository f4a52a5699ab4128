import Foundation
import Logging
import SesameCore
import Testing

@testable import SesameStore

/// A private state directory with a key file, and helpers to open, damage and inspect the store.
struct StoreFixture {
    let directory: String
    let keyFile: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        keyFile = directory + "/store.key"
        try StoreFixture.writeKey(StoreKey.generate(source: "test"), to: keyFile)
    }

    static func writeKey(_ key: StoreKey, to path: String) throws {
        try key.fileContents.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    var storePath: String { directory + "/" + EncryptedStore.fileName }

    var sources: KeySources { KeySources(credentialsDirectory: nil, keyFile: keyFile, generatedKeyFile: nil) }

    func open(
        _ sources: KeySources? = nil,
        policy: EncryptedStore.DamagePolicy = .refuse,
        sequenceFile: String? = nil
    ) throws -> (EncryptedStore, SessionSnapshot) {
        try EncryptedStore.open(
            directory: directory,
            keySources: sources ?? self.sources,
            onDamage: policy,
            sequenceFile: sequenceFile,
            logger: Logger(label: "test")
        )
    }

    var bytes: Data { FileManager.default.contents(atPath: storePath) ?? Data() }

    func replace(with data: Data) {
        #expect(
            FileManager.default.createFile(atPath: storePath, contents: data, attributes: [.posixPermissions: 0o600])
        )
    }

    static let accessToken = "AT-store-test-9c1e"
    static let refreshToken = "RT-store-test-52aa"

    static func snapshot(sequence: UInt64 = 7) -> SessionSnapshot {
        let account = Account(
            id: "google-1",
            provider: "google",
            ownerUID: 1000,
            subject: "alice",
            state: .active,
            createdAt: Date(timeIntervalSince1970: 1_800_000_000)
        )
        let tokens = TokenSet(
            accessToken: accessToken,
            refreshToken: refreshToken,
            accessTokenExpiresAt: Date(timeIntervalSince1970: 1_800_003_600)
        )
        return SessionSnapshot(accounts: [StoredAccount(account: account, tokens: tokens)], lastSequence: sequence)
    }

    /// Where each record of a format-2 file starts.
    static func recordOffsets(of file: Data) -> [Int] {
        var offsets: [Int] = []
        var offset = StoreFormat.headerSize
        while offset + StoreFormat.recordHeaderSize <= file.count {
            offsets.append(offset)
            let length = file[offset..<offset + StoreFormat.lengthSize].reduce(0) { $0 << 8 | Int($1) }
            offset += StoreFormat.recordHeaderSize + length
        }
        return offsets
    }

    /// The sealed part (nonce, ciphertext, tag) of each record of a format-2 file.
    static func records(of file: Data) -> [Data] {
        recordOffsets(of: file).map { offset in
            let length = file[offset..<offset + StoreFormat.lengthSize].reduce(0) { $0 << 8 | Int($1) }
            let start = offset + StoreFormat.recordHeaderSize
            return Data(file[start..<min(file.count, start + length)])
        }
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
