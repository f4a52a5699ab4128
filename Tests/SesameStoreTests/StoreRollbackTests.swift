import Foundation
import SesameCore
import Testing

@testable import SesameStore

/// A store put back from an older copy must not make event sequence numbers go
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
        #expect(throws: StoreError.rolledBack(path: fixture.storePath, sequence: 3, markPath: mark, mark: 4)) {
            try fixture.open(sequenceFile: mark)
        }
    }

    @Test func aMarkThatIsNotOneIsNamed() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        _ = try fixture.open()
        let mark = fixture.storePath + ".sequence"
        #expect(FileManager.default.createFile(atPath: mark, contents: Data("seven".utf8)))
        #expect(throws: StoreError.badSequenceMark(path: mark)) { try fixture.open() }
    }

    /// The mark file as the store leaves it, by slot.
    private static func slots(_ path: String) throws -> [String] {
        let data = try #require(FileManager.default.contents(atPath: path))
        #expect(data.count == SequenceMark.slotOffsets[1] + SequenceMark.slotSize)
        return SequenceMark.slotOffsets.map {
            String(decoding: data.dropFirst($0).prefix(SequenceMark.slotSize), as: UTF8.self)
        }
    }

    @Test func eachNumberOverwritesTheOlderSlotOfTheSameFile() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        let markPath = fixture.storePath + ".sequence"
        try store.save(StoreFixture.snapshot(sequence: 5))
        let inode = try FileManager.default.attributesOfItem(atPath: markPath)[.systemFileNumber] as? Int
        try store.save(StoreFixture.snapshot(sequence: 6))
        try store.save(StoreFixture.snapshot(sequence: 7))
        #expect(try FileManager.default.attributesOfItem(atPath: markPath)[.systemFileNumber] as? Int == inode)
        let slots = try Self.slots(markPath)
        #expect(slots[0].contains("00000000000000000007") && slots[1].contains("00000000000000000006"))
    }

    /// The line is the one every version writes and reads back: its checksum (the first 8 bytes
    /// of SHA-256 of the rest, in lowercase hex) computed here by another tool, Python's hashlib.
    @Test func aSlotIsWrittenExactlyAsEarlierVersionsWroteIt() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(StoreFixture.snapshot(sequence: 42))
        let slots = try Self.slots(fixture.storePath + ".sequence")
        #expect(slots.contains("sesame-store-sequence 00000000000000000042 a68629a6901b735e\n"))
    }

    /// A write of the newest slot cut short leaves the number before it, which the store has
    /// passed: the store opens. With both slots damaged the mark is named.
    @Test func aDamagedSlotFallsBackToTheOtherAndTwoAreNamed() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        let markPath = fixture.storePath + ".sequence"
        for sequence in [5, 6, 7] { try store.save(StoreFixture.snapshot(sequence: UInt64(sequence))) }
        var data = try #require(FileManager.default.contents(atPath: markPath))
        data[40] ^= 1  // in the digits of slot 0, which holds 7
        #expect(FileManager.default.createFile(atPath: markPath, contents: data))
        let (reopened, snapshot) = try fixture.open()
        #expect(snapshot.lastSequence == 7)
        try reopened.save(StoreFixture.snapshot(sequence: 8))
        // Opening recorded 7 again over the damaged slot; 8 went to the other.
        let slots = try Self.slots(markPath)
        #expect(slots[0].contains("00000000000000000007") && slots[1].contains("00000000000000000008"))
        data = try #require(FileManager.default.contents(atPath: markPath))
        data[40] ^= 1
        data[SequenceMark.slotOffsets[1] + 40] ^= 1
        #expect(FileManager.default.createFile(atPath: markPath, contents: data))
        #expect(throws: StoreError.badSequenceMark(path: markPath)) { try fixture.open() }
    }

    @Test func aMarkOfOneLineAsEarlierVersionsWroteIsReadAndRewritten() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        try fixture.open().0.save(StoreFixture.snapshot(sequence: 5))
        let markPath = fixture.storePath + ".sequence"
        #expect(FileManager.default.createFile(atPath: markPath, contents: Data("sesame-store-sequence 9\n".utf8)))
        #expect(throws: StoreError.self) { try fixture.open() }
        #expect(FileManager.default.createFile(atPath: markPath, contents: Data("sesame-store-sequence 4\n".utf8)))
        try fixture.open().0.save(StoreFixture.snapshot(sequence: 6))
        // Opening recorded the store's 5 as a new file of two slots; 6 went to the second.
        let slots = try Self.slots(markPath)
        #expect(slots[0].contains("00000000000000000005") && slots[1].contains("00000000000000000006"))
    }
}
