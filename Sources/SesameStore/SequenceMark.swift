import Foundation

/// The highest event sequence number the store has been written with, kept in a file of its own
/// so that a store replaced by an older copy (a restored backup, a rolled-back snapshot, a file
/// put back by hand) is noticed: sequence numbers must keep growing across restarts
/// (io.sesame.Events), and a store older than its mark would make them go back. It detects only
/// what does not also roll the mark back; README "Store rollback" says where to keep it.
struct SequenceMark {
    /// The mark's file.
    let path: String
    /// The sequence number the file held when it was read, nil when there was none yet.
    let recorded: UInt64?

    private static let prefix = "sesame-store-sequence "

    /// Reads the mark at `path`.
    init(path: String) throws(StoreError) {
        self.path = path
        self.recorded = try Self.read(path)
    }

    private static func read(_ path: String) throws(StoreError) -> UInt64? {
        guard let data = try AtomicFile.read(path) else { return nil }
        let text = String(decoding: data.prefix(128), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix(Self.prefix), let sequence = UInt64(text.dropFirst(Self.prefix.count)) else {
            throw .badSequenceMark(path: path)
        }
        return sequence
    }

    /// Records `sequence`, durably, as the highest written.
    func record(_ sequence: UInt64) throws(StoreError) {
        try AtomicFile.write(Data((Self.prefix + "\(sequence)\n").utf8), to: path)
    }
}
