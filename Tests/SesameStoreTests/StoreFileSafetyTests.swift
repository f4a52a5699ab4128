import Foundation
import SesameCore
import Testing

@testable import SesameStore

/// What another user could leave in sesamed's way: a planted temporary file or symlink, a key
/// file they own, and a development key that went missing beside its store.
@Suite struct StoreFileSafetyTests {
    private static var isRoot: Bool { geteuid() == 0 }

    @Test func aPlantedWorldWritableTemporaryFileNeitherWidensTheStoreNorSurvives() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let temporary = fixture.storePath + ".tmp"
        #expect(FileManager.default.createFile(atPath: temporary, contents: Data("x".utf8)))
        chmod(temporary, 0o666)
        _ = try fixture.open()
        let mode = try FileManager.default.attributesOfItem(atPath: fixture.storePath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(!FileManager.default.fileExists(atPath: temporary))
    }

    @Test func aPlantedSymlinkIsNotWrittenThrough() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let victim = fixture.directory + "/victim"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("unchanged".utf8)))
        try FileManager.default.createSymbolicLink(atPath: fixture.storePath + ".tmp", withDestinationPath: victim)
        _ = try fixture.open()
        #expect(FileManager.default.contents(atPath: victim) == Data("unchanged".utf8))
        #expect(try fixture.open().1.accounts.isEmpty, "the store itself was written and opens")
    }

    @Test(.enabled(if: isRoot, "changing a file's owner needs root"))
    func aKeyFileAnotherUserOwnsIsRefused() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        #expect(chown(fixture.keyFile, 65534, 65534) == 0)
        #expect {
            try fixture.sources.load()
        } throws: { error in
            guard case .unusableKey(_, let reason) = error as? StoreError else { return false }
            return reason.contains("owned by uid 65534")
        }
    }

    @Test func aMissingDevelopmentKeyIsNotReplacedBesideItsStore() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let generated = fixture.directory + "/dev.key"
        let sources = KeySources(credentialsDirectory: nil, keyFile: nil, generatedKeyFile: generated)
        _ = try fixture.open(sources)
        try FileManager.default.removeItem(atPath: generated)
        #expect {
            try fixture.open(sources)
        } throws: { error in
            guard case .unusableKey(_, let reason) = error as? StoreError else { return false }
            return reason.contains("the store it sealed exists")
        }
        #expect(!FileManager.default.fileExists(atPath: generated), "no new key is left behind")
    }
}
