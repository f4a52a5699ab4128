import Crypto
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The highest event sequence number the store has been written with, kept in a file of its own
/// so that a store replaced by an older copy (a restored backup, a rolled-back snapshot, a file
/// put back by hand) is noticed: sequence numbers must keep growing across restarts
/// (io.sesame.Events), and a store older than its mark would make them go back. It detects only
/// what does not also roll the mark back; README "Store rollback" says where to keep it.
///
/// The file holds two fixed-size slots, each a line with the number and a checksum of it, the
/// second 4 KiB after the first (zeros between), so that the two never share a disk block:
///
/// ```
/// sesame-store-sequence 00000000000000000042 a68629a6901b735e\n   (60 bytes)
/// ```
///
/// It is created whole, atomically; from then on each new number overwrites the slot that does
/// not hold the highest, in place, and one fdatasync makes it durable (replacing the
/// file took two journal commits on every change). A write cut short damages only the slot it
/// was writing, whose checksum then fails; the other still holds the number before, which the
/// store has passed, so nothing is refused that should not be. A file of one line with no
/// checksum, as earlier versions wrote, is read too.
struct SequenceMark {
    /// The mark's file.
    let path: String
    /// The highest sequence number recorded, nil when there is none yet.
    private(set) var recorded: UInt64?
    /// The file, open for overwriting its slots; nil when the next record must create it anew.
    private var file: OpenFile?
    /// The slot holding `recorded`.
    private var slot = 0

    private static let prefix = "sesame-store-sequence "
    static let slotSize = prefix.utf8.count + 20 + 1 + 16 + 1
    /// Where each slot starts.
    static let slotOffsets = [0, 4096]
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Reads the mark at `path`.
    init(path: String) throws(StoreError) {
        self.path = path
        guard let found = try AtomicFile.openForUpdate(path) else { return }
        guard let (sequence, slot) = Self.parse(found.data) else { throw .badSequenceMark(path: path) }
        recorded = sequence
        if let slot, found.file != nil {
            self.slot = slot
            self.file = found.file
        }
    }

    /// The highest valid slot's number and index, or the one-line form's number (slot nil);
    /// nil when the contents are neither.
    private static func parse(_ data: Data) -> (UInt64, Int?)? {
        if data.count == slotOffsets[1] + slotSize {
            let slots = slotOffsets.indices.compactMap { index in
                number(in: data.dropFirst(slotOffsets[index]).prefix(slotSize)).map { ($0, index) }
            }
            if let highest = slots.max(by: { $0.0 < $1.0 }) { return (highest.0, highest.1) }
        }
        let text = String(decoding: data.prefix(128), as: UTF8.self).trimmingWhitespace()
        guard text.hasPrefix(prefix), let sequence = UInt64(text.dropFirst(prefix.count)) else { return nil }
        return (sequence, nil)
    }

    /// The number a slot holds when its checksum matches.
    private static func number(in slot: Data) -> UInt64? {
        let text = String(decoding: slot, as: UTF8.self)
        guard text.utf8.count == slotSize, text.hasPrefix(prefix), text.hasSuffix("\n") else { return nil }
        let fields = text.dropFirst(prefix.count).dropLast().split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 2, let sequence = UInt64(fields[0]) else { return nil }
        return line(sequence) == slot ? sequence : nil
    }

    /// A slot holding `sequence`.
    private static func line(_ sequence: UInt64) -> Data {
        let digits = String(sequence)
        let body = prefix + String(repeating: "0", count: 20 - digits.count) + digits
        var slot = Data((body + " ").utf8)
        // Lowercase hex, two digits a byte, written directly: String(format:) for each byte
        // cost about 75,000 instructions at every change.
        for byte in SHA256.hash(data: Data(body.utf8)).prefix(8) {
            slot.append(hexDigits[Int(byte >> 4)])
            slot.append(hexDigits[Int(byte & 0x0f)])
        }
        slot.append(UInt8(ascii: "\n"))
        return slot
    }

    /// The descriptor the slots are written through (for tests).
    var fileDescriptor: Int32? { file?.descriptor }

    /// Records `sequence`, durably, as the highest written.
    mutating func record(_ sequence: UInt64) throws(StoreError) {
        let line = Self.line(sequence)
        if let file {
            let other = 1 - slot
            do {
                try AtomicFile.writeDurably(line, to: file, at: Self.slotOffsets[other], path: path)
            } catch {
                self.file = nil  // what the slot holds now is unknown: the next record starts anew
                throw error
            }
            slot = other
        } else {
            let gap = Data(count: Self.slotOffsets[1] - Self.slotSize)
            file = try AtomicFile.writeKeepingOpen([line, gap, line], to: path)
            slot = 0
        }
        recorded = sequence
    }
}
