import Foundation
import SesameCore
import Testing

@testable import SesameStore

/// Issue 12 item 5: a store put back from an older copy must not make event sequence numbers go
/// backwards (io.sesame.Events promises they grow across restarts).
@Suite struct StoreRollbackTests {
    @Test func anOlderCopyOfTheStoreIsRefusedAndLeftAsItIs() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let backup = try Self.restoreAnOlderStore(fixture, from: 5, over: 9)
        #expect(
            throws: StoreError.rolledBack(
                path: fixture.storePath,
                sequence: 5,
                markPath: fixture.storePath + ".sequence",
                mark: 9
            )
        ) { try fixture.open() }
        #expect(fixture.bytes == backup, "the refused store is not changed")
    }

    /// Writes the store at sequence `older`, then at `newer`, and puts the older file back.
    private static func restoreAnOlderStore(_ fixture: StoreFixture, from older: UInt64, over newer: UInt64) throws
        -> Data
    {
        try fixture.open().0.save(StoreFixture.snapshot(sequence: older))
        let backup = fixture.bytes
        try fixture.open().0.save(StoreFixture.snapshot(sequence: newer))
        fixture.replace(with: backup)
        return backup
    }

    @Test func deletingTheMarkAcceptsTheOlderStoreOnPurpose() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        _ = try Self.restoreAnOlderStore(fixture, from: 5, over: 9)
        try FileManager.default.removeItem(atPath: fixture.storePath + ".sequence")
        #expect(try fixture.open().1.lastSequence == 5)
    }

    @Test func aLostStoreStartsEmptyButKeepsCounting() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(StoreFixture.snapshot(sequence: 12))
        try FileManager.default.removeItem(atPath: fixture.storePath)
        let (_, snapshot) = try fixture.open()
        #expect(snapshot.accounts.isEmpty)
        #expect(snapshot.lastSequence == 12)
    }

    @Test func theMarkCanLiveOutsideTheStateDirectory() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let elsewhere = try StoreFixture()
        defer { elsewhere.cleanUp() }
        let mark = elsewhere.directory + "/sessions.sequence"
        try fixture.open(sequenceFile: mark).0.save(StoreFixture.snapshot(sequence: 3))
        let backup = fixture.bytes
        try fixture.open(sequenceFile: mark).0.save(StoreFixture.snapshot(sequence: 4))
        fixture.replace(with: backup)
        #expect(!FileManager.default.fileExists(atPath: fixture.storePath + ".sequence"))
        #expect(throws: StoreError.self) { try fixture.open(sequenceFile: mark) }
    }

    @Test func aMarkThatIsNotOneIsNamed() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        _ = try fixture.open()
        let mark = fixture.storePath + ".sequence"
        #expect(FileManager.default.createFile(atPath: mark, contents: Data("seven".utf8)))
        #expect(throws: StoreError.badSequenceMark(path: mark)) { try fixture.open() }
    }
}
