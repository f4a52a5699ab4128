import Foundation
import SesameCore
import Testing

@testable import SesameStore

@Suite struct KeySourceTests {
    @Test func aCredentialComesFirst() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let credentials = fixture.directory + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        let credential = StoreKey.generate(source: "test")
        // systemd hands over exactly the bytes that were encrypted: here 64 hex digits, no newline.
        let hex = Data(credential.fileContents.prefix(64))
        #expect(FileManager.default.createFile(atPath: credentials + "/sesame.key", contents: hex))
        let loaded = try KeySources(credentialsDirectory: credentials, keyFile: fixture.keyFile, generatedKeyFile: nil)
            .load()
        #expect(loaded.primary.id == credential.id && loaded.keyFile == nil)
        #expect(loaded.primary.source == "credential sesame.key")
    }

    @Test func aKeyFileOthersCanReadIsRefused() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: fixture.keyFile)
        #expect {
            try fixture.sources.load()
        } throws: { error in
            guard case .unusableKey(let source, let reason) = error as? StoreError else { return false }
            return source.contains(fixture.keyFile) && reason.contains("640")
        }
    }

    @Test func withNoSourceTheErrorSaysWhatWasTried() throws {
        let sources = KeySources(
            credentialsDirectory: "/nonexistent/creds",
            keyFile: "/nonexistent/key",
            generatedKeyFile: nil
        )
        #expect(
            throws: StoreError.noKey(tried: ["credential /nonexistent/creds/sesame.key", "key file /nonexistent/key"])
        ) {
            try sources.load()
        }
    }

    @Test func aDevelopmentKeyIsGeneratedOnceWithMode600() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let generated = fixture.directory + "/dev.key"
        let sources = KeySources(credentialsDirectory: nil, keyFile: nil, generatedKeyFile: generated)
        let first = try sources.load()
        let second = try sources.load()
        #expect(first.isGenerated && first.primary.id == second.primary.id)
        let attributes = try FileManager.default.attributesOfItem(atPath: generated)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
    }

    @Test func rekeyMovesToANewKeyThatOpensTheStore() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let (store, _) = try fixture.open()
        try store.save(StoreFixture.snapshot())
        let before = store.keyID
        let after = try store.rekey()
        #expect(after != before && store.keyID == after)
        #expect(!FileManager.default.fileExists(atPath: fixture.keyFile + ".next"))
        let (reopened, snapshot) = try fixture.open()
        #expect(reopened.keyID == after && snapshot == StoreFixture.snapshot())
    }

    @Test func aRekeyInterruptedAfterResealingIsFinishedAtStart() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let (store, _) = try fixture.open()
        try store.save(StoreFixture.snapshot())
        // The crash came after the store was sealed with the new key, before the key file moved.
        let next = StoreKey.generate(source: "test")
        try StoreFixture.writeKey(next, to: fixture.keyFile + ".next")
        fixture.replace(
            with: try StoreFormat.seal(records: [try JSONEncoder().encode(StoreFixture.snapshot())], key: next)
        )
        let (reopened, snapshot) = try fixture.open()
        #expect(reopened.keyID == next.id && snapshot == StoreFixture.snapshot())
        #expect(!FileManager.default.fileExists(atPath: fixture.keyFile + ".next"))
        #expect(try fixture.open().0.keyID == next.id)
    }

    @Test func aRekeyInterruptedBeforeResealingKeepsTheOldKey() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let (store, _) = try fixture.open()
        try store.save(StoreFixture.snapshot())
        try StoreFixture.writeKey(StoreKey.generate(source: "test"), to: fixture.keyFile + ".next")
        let (reopened, snapshot) = try fixture.open()
        #expect(reopened.keyID == store.keyID && snapshot == StoreFixture.snapshot())
    }

    @Test func aStoreSealedWithThePreviousCredentialIsResealedWithTheCurrentOne() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let credentials = fixture.directory + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        let old = StoreKey.generate(source: "test")
        let new = StoreKey.generate(source: "test")
        #expect(FileManager.default.createFile(atPath: credentials + "/sesame.key", contents: new.fileContents))
        #expect(
            FileManager.default.createFile(atPath: credentials + "/sesame.key.previous", contents: old.fileContents)
        )
        fixture.replace(
            with: try StoreFormat.seal(records: [try JSONEncoder().encode(StoreFixture.snapshot())], key: old)
        )
        let sources = KeySources(credentialsDirectory: credentials, keyFile: nil, generatedKeyFile: nil)
        let (store, snapshot) = try fixture.open(sources)
        #expect(snapshot == StoreFixture.snapshot() && store.keyID == new.id)
        #expect(try StoreFormat.header(of: fixture.bytes, path: "").keyID == new.id)
    }
}
