import Crypto
import Foundation
import SesameCore
import Testing

@testable import SesameStore

/// Format 2: changes appended as sealed records, the file rewritten whole now and then, and
/// everything a crash or a hand on the file can leave behind.
@Suite struct StoreLogTests {
    private static func accounts(_ count: Int, token: String = "AT") -> [StoredAccount] {
        (0..<count).map { SnapshotEncoderTests.account($0, token: token) }
    }

    private static func sorted(_ snapshot: SessionSnapshot) -> SessionSnapshot {
        SessionSnapshot(
            accounts: snapshot.accounts.sorted { $0.account.id < $1.account.id },
            lastSequence: snapshot.lastSequence
        )
    }

    @Test func aChangeAppendsOnlyWhatItChangedAndReopensToTheSameState() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        var accounts = Self.accounts(200)
        try store.save(SessionSnapshot(accounts: accounts, lastSequence: 1))
        let before = fixture.bytes.count
        accounts[3] = SnapshotEncoderTests.account(3, token: "renewed")
        accounts.remove(at: 7)
        accounts.append(SnapshotEncoderTests.account(500))
        let changed = SessionSnapshot(accounts: accounts, lastSequence: 4)
        try store.save(changed)
        let oneAccount = try JSONEncoder().encode(accounts[0]).count
        #expect(fixture.bytes.count - before < 3 * oneAccount, "two accounts and an id, not 200 accounts")
        #expect(Self.sorted(try fixture.open().1) == Self.sorted(changed))
    }

    /// The engine says what changed, so that a save need not compare 1,000 accounts; changes
    /// that do not add up to the snapshot are not trusted, and every account is compared.
    @Test func aSaveWithItsChangesWritesJustThoseAndDistrustsOnesThatDoNotAddUp() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        var accounts = Self.accounts(50)
        try store.save(SessionSnapshot(accounts: accounts, lastSequence: 1))
        let renewed = SnapshotEncoderTests.account(3, token: "renewed")
        accounts[3] = renewed
        let removed = accounts.remove(at: 7)
        let told = SessionSnapshot(accounts: accounts, lastSequence: 3)
        try store.save(told, changes: [renewed.account.id: renewed, removed.account.id: nil])
        #expect(Self.sorted(try fixture.open().1) == Self.sorted(told))
        // An account added without being named among the changes: the counts do not add up.
        accounts.append(SnapshotEncoderTests.account(99))
        accounts[0] = SnapshotEncoderTests.account(0, token: "renewed")
        let untold = SessionSnapshot(accounts: accounts, lastSequence: 5)
        try store.save(untold, changes: [accounts[0].account.id: accounts[0]])
        #expect(Self.sorted(try fixture.open().1) == Self.sorted(untold))
    }

    @Test func savingTheSameStateWritesNothing() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        try store.save(StoreFixture.snapshot())
        let written = fixture.bytes
        try store.save(StoreFixture.snapshot())
        #expect(fixture.bytes == written)
    }

    /// Big tokens, so that a few changes outgrow the minimum the appended records may take.
    @Test func appendedChangesAreFoldedIntoANewFileOnceTheyOutgrowTheState() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        var sizes: [Int] = []
        var last = SessionSnapshot()
        for round in 1...40 {
            let token = String(repeating: "t", count: 30_000) + "\(round)"
            last = SessionSnapshot(accounts: Self.accounts(1, token: token), lastSequence: UInt64(round))
            try store.save(last)
            sizes.append(fixture.bytes.count)
        }
        #expect(try #require(sizes.max()) <= 2 * StoreWriter.minimumAppendedBytes, "the file does not grow without end")
        #expect(zip(sizes, sizes.dropFirst()).contains { $0 > $1 }, "it was rewritten smaller")
        #expect(try fixture.open().1 == last)
    }

    /// The crash came while the last change was being appended: its record is cut short and the
    /// sequence mark still holds the change before, since the save never returned.
    @Test func aCrashMidAppendLosesOnlyTheChangeThatWasNotAcknowledged() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        try store.save(StoreFixture.snapshot(sequence: 7))
        let mark = try #require(FileManager.default.contents(atPath: fixture.storePath + ".sequence"))
        try store.save(SessionSnapshot(lastSequence: 8))
        let whole = fixture.bytes
        let lastRecord = try #require(StoreFixture.recordOffsets(of: whole).last)
        for cut in [lastRecord + 2, lastRecord + 30, whole.count - 1] {
            fixture.replace(with: whole.prefix(cut))
            #expect(FileManager.default.createFile(atPath: fixture.storePath + ".sequence", contents: mark))
            let (reopened, snapshot) = try fixture.open()
            #expect(snapshot == StoreFixture.snapshot(sequence: 7))
            #expect(fixture.bytes.count < lastRecord, "the torn record is gone from the file")
            try reopened.save(StoreFixture.snapshot(sequence: 9))
            #expect(try fixture.open().1 == StoreFixture.snapshot(sequence: 9))
        }
    }

    /// Without a mark to catch an older state, a damaged length must still not pass for a cut
    /// short record: that would drop acknowledged changes and rewrite the file.
    @Test func aDamagedLengthIsRefusedEvenWithNoMark() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        for sequence in 1...3 { try store.save(StoreFixture.snapshot(sequence: UInt64(sequence))) }
        let good = fixture.bytes
        try FileManager.default.removeItem(atPath: fixture.storePath + ".sequence")
        let last = try #require(StoreFixture.recordOffsets(of: good).last)
        for byte in [last, last + 3, last + 4] {
            var damaged = good
            damaged[byte] ^= 0x80
            fixture.replace(with: damaged)
            #expect(throws: StoreError.tampered(path: fixture.storePath)) { try fixture.open() }
            #expect(fixture.bytes == damaged)
        }
    }

    /// Where a crash let the file's size get ahead of its data, the end reads as zeros: that
    /// record was never acknowledged, and is left out.
    @Test func zerosWhereTheLastRecordShouldBeAreACrashNotDamage() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        try store.save(StoreFixture.snapshot(sequence: 7))
        fixture.replace(with: fixture.bytes + Data(count: 600))
        #expect(try fixture.open().1 == StoreFixture.snapshot(sequence: 7))
        #expect(StoreFixture.recordOffsets(of: fixture.bytes).count == 1, "rewritten without them")
    }

    @Test func recordsMovedDroppedOrRepeatedInTheMiddleFailAuthentication() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        for sequence in 1...3 { try store.save(StoreFixture.snapshot(sequence: UInt64(sequence))) }
        let good = fixture.bytes
        let offsets = StoreFixture.recordOffsets(of: good) + [good.count]
        let records = (0..<offsets.count - 1).map { good[offsets[$0]..<offsets[$0 + 1]] }
        #expect(records.count == 4)
        let header = good.prefix(StoreFormat.headerSize)
        for order in [[0, 2, 3], [0, 2, 1, 3], [0, 1, 1, 3], [1, 2, 3], [0, 1, 2, 3, 3]] {
            let damaged = order.reduce(header) { $0 + records[$1] }
            fixture.replace(with: damaged)
            #expect(throws: StoreError.tampered(path: fixture.storePath), "order \(order)") { try fixture.open() }
            #expect(fixture.bytes == damaged)
        }
    }

    @Test func aFormatOneStoreIsReadAndRewrittenInFormatTwo() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let key = try fixture.sources.load().primary
        let header = Data("SESAMEST".utf8) + [0, 1] + key.idBytes
        let plaintext = try JSONEncoder().encode(StoreFixture.snapshot())
        let box = try ChaChaPoly.seal(plaintext, using: key.key, authenticating: header)
        fixture.replace(with: header + box.combined)
        let (store, snapshot) = try fixture.open()
        #expect(snapshot == StoreFixture.snapshot())
        #expect(try StoreFormat.header(of: fixture.bytes, path: "").version == 2)
        try store.save(StoreFixture.snapshot(sequence: 8))
        #expect(try fixture.open().1 == StoreFixture.snapshot(sequence: 8))
    }

    /// A write that fails may leave part of a record in the file: nothing is appended after it,
    /// the next save writes the whole state to a new file.
    @Test func aFailedAppendIsFollowedByAWholeNewFile() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let key = try fixture.sources.load().primary
        var writer = StoreWriter(path: fixture.storePath, key: key, lastSequence: 0)
        try writer.save(SessionSnapshot(lastSequence: 1), key: key)
        let descriptor = try #require(writer.fileDescriptor)
        let readOnly = open("/dev/null", O_RDONLY)
        #expect(dup2(readOnly, descriptor) == descriptor)  // writes to it now fail with EBADF
        close(readOnly)
        #expect(throws: StoreError.self) { try writer.save(StoreFixture.snapshot(sequence: 2), key: key) }
        try writer.save(StoreFixture.snapshot(sequence: 3), key: key)
        let keys = KeySources.Loaded(primary: key, others: [], isGenerated: false, keyFile: nil)
        let contents = try EncryptedStore.decode(fixture.bytes, keys: keys, path: fixture.storePath)
        #expect(contents.snapshot == StoreFixture.snapshot(sequence: 3) && contents.appendedBytes == 0)
    }

    /// A rewrite that fails (here: something in the way of its temporary file) leaves the old
    /// file as it was, and the next save writes the whole state anew.
    @Test func aFailedRewriteIsFollowedByAWholeNewFileOnTheNextSave() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        let store = try fixture.open().0
        try store.save(StoreFixture.snapshot(sequence: 5))
        let before = fixture.bytes
        try FileManager.default.createDirectory(atPath: fixture.storePath + ".tmp", withIntermediateDirectories: false)
        #expect(throws: StoreError.self) { try store.rekey() }
        #expect(fixture.bytes == before)
        try FileManager.default.removeItem(atPath: fixture.storePath + ".tmp")
        try store.save(StoreFixture.snapshot(sequence: 6))
        #expect(StoreFixture.recordOffsets(of: fixture.bytes).count == 1, "written whole, not appended")
        #expect(try fixture.open().1 == StoreFixture.snapshot(sequence: 6))
    }

    /// A mark whose in-place write fails is written whole, as a new file, the next time.
    @Test func aFailedMarkWriteIsFollowedByAWholeNewMark() throws {
        let fixture = try StoreFixture()
        defer { fixture.cleanUp() }
        var mark = try SequenceMark(path: fixture.directory + "/mark")
        try mark.record(5)
        let descriptor = try #require(mark.fileDescriptor)
        let readOnly = open("/dev/null", O_RDONLY)
        #expect(dup2(readOnly, descriptor) == descriptor)  // writes to it now fail with EBADF
        close(readOnly)
        #expect(throws: StoreError.self) { try mark.record(6) }
        try mark.record(7)
        #expect(try SequenceMark(path: fixture.directory + "/mark").recorded == 7)
    }
}
