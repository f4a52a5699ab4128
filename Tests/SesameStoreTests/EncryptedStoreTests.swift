import Foundation
import SesameCore
import Testing

@testable import SesameStore

@Suite struct EncryptedStoreTests {
    @Test func roundTripsEveryAccountTokenAndTheSequence() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let (store, empty) = try fixture.open()
        #expect(empty == SessionSnapshot())
        try store.save(StoreFixture.snapshot())
        let (_, reopened) = try fixture.open()
        #expect(reopened == StoreFixture.snapshot())
        let attributes = try FileManager.default.attributesOfItem(atPath: fixture.storePath)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
    }

    @Test func theFileHoldsNoTokenInTheClear() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(StoreFixture.snapshot())
        let text = String(decoding: fixture.bytes, as: UTF8.self)
        for secret in [StoreFixture.accessToken, StoreFixture.refreshToken, "alice", "google-1"] {
            #expect(!text.contains(secret))
        }
    }

    @Test func everyRecordUsesAFreshNonce() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        try store.save(StoreFixture.snapshot(sequence: 7))
        try store.save(StoreFixture.snapshot(sequence: 8))
        let first = fixture.bytes
        try store.rekey()
        let records = StoreFixture.records(of: first) + StoreFixture.records(of: fixture.bytes)
        #expect(records.count == 4)
        #expect(Set(records.map { $0.prefix(StoreFormat.nonceSize) }).count == records.count)
    }

    /// Opens the damaged store, expecting `check` to accept the error, and the file unchanged.
    private func expectRefused(
        _ fixture: StoreFixture,
        _ damaged: Data,
        sources: KeySources? = nil,
        _ check: (StoreError) -> Bool
    ) {
        fixture.replace(with: damaged)
        #expect {
            try fixture.open(sources)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return check(error)
        }
        #expect(fixture.bytes == damaged, "a store that cannot be read is never rewritten")
    }

    /// The file is the empty store's record and one change. A record's length is checked
    /// against its complement, so a damaged length is refused too, not taken for a crash.
    @Test func everyFlippedBitIsANamedErrorAndChangesNothing() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(StoreFixture.snapshot())
        let good = fixture.bytes
        #expect(StoreFixture.recordOffsets(of: good).count == 2)
        for byte in 0..<good.count {
            for bit in [0, 7] {
                var damaged = good
                damaged[byte] ^= UInt8(1 << bit)
                expectRefused(fixture, damaged) { error in
                    switch (byte, error) {
                    case (0..<8, .notAStore), (8..<10, .unsupportedVersion), (10..<18, .wrongKey): true
                    case (18..., .tampered): true  // lengths, nonces, bodies and tags
                    default: false
                    }
                }
            }
        }
    }

    /// Cut within the first record, the file is truncated; cut after it, it holds an older
    /// state than the sequence mark, and is refused as rolled back.
    @Test func truncationAtEveryLengthIsRefused() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(SessionSnapshot(lastSequence: 1))
        let good = fixture.bytes
        let second = StoreFixture.recordOffsets(of: good)[1]
        for length in 0..<good.count {
            expectRefused(fixture, good.prefix(length)) { error in
                switch (length, error) {
                case (..<second, .truncated), (second..., .rolledBack): true
                default: false
                }
            }
        }
    }

    @Test func aFutureFormatIsRefusedNotGuessedAt() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(StoreFixture.snapshot())
        var future = fixture.bytes
        future[9] = 3
        expectRefused(fixture, future) { $0 == .unsupportedVersion(path: fixture.storePath, found: 3, supported: 2) }
    }

    @Test func theWrongKeyNamesBothKeysAndChangesNothing() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let (store, _) = try fixture.open()
        try store.save(StoreFixture.snapshot())
        let sealedWith = store.keyID
        let other = fixture.directory + "/other.key"
        try StoreFixture.writeKey(StoreKey.generate(source: "test"), to: other)
        let sources = KeySources(credentialsDirectory: nil, keyFile: other, generatedKeyFile: nil)
        expectRefused(fixture, fixture.bytes, sources: sources) { error in
            guard case .wrongKey(_, let storeKeyID, let available) = error else { return false }
            return storeKeyID == sealedWith && available.count == 1 && available[0].contains(other)
        }
        // Even the move-aside policy does not touch a store that only needs another key.
        #expect(throws: StoreError.self) { try fixture.open(sources, policy: .moveAside) }
        #expect(FileManager.default.fileExists(atPath: fixture.storePath))
    }

    @Test func aDamagedStoreIsMovedAsideOnlyWhenConfigured() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(StoreFixture.snapshot())
        var damaged = fixture.bytes
        damaged[damaged.count - 1] ^= 1
        fixture.replace(with: damaged)
        let (_, snapshot) = try fixture.open(policy: .moveAside)
        // No accounts, but event sequence numbers go on from the last store written.
        #expect(snapshot == SessionSnapshot(lastSequence: StoreFixture.snapshot().lastSequence))
        let aside = try FileManager.default.contentsOfDirectory(atPath: fixture.directory)
            .filter { $0.hasPrefix(EncryptedStore.fileName + ".damaged-") }
        #expect(aside.count == 1)
        #expect(FileManager.default.contents(atPath: fixture.directory + "/" + aside[0]) == damaged)
    }
}
