import Crypto
import FoundationEssentials

/// The store file: a clear header saying what it is, which format and which key, then the state
/// sealed with ChaCha20-Poly1305. The header is part of every seal's associated data, so changing
/// any of it fails authentication just as changing the body does.
///
/// Format 2, written since changes are appended (re-sealing every account on every
/// change made its cost grow with the number of accounts), is a log of sealed records:
///
/// ```
/// header:  magic "SESAMEST" (8) | format version 2, big-endian (2) | key id (8)
/// record:  sealed length, big-endian (4) | its complement (4) | nonce (12) | ciphertext | tag (16)
/// ```
///
/// Record 0 holds the whole state (a `SessionSnapshot`), every later record one change
/// (`StoreChange`). Record i's associated data is the header, i (8 bytes, big-endian) and the
/// tag of record i − 1 (16 zero bytes for record 0): records cannot be reordered, dropped from
/// the middle, repeated or taken from another file without failing authentication. Dropping
/// records from the end yields an older state, which the sequence mark catches as any rollback.
/// The length's complement tells a damaged length (refused) from a record whose append a crash
/// cut short (a whole header claiming more bytes than the file has, or nothing but zeros, which
/// some file systems show where the size outran the data): only the latter is left out.
///
/// Appends assume what SQLite calls powersafe overwrite: writing the end of the file does not
/// damage the bytes of earlier records that share its last block.
///
/// Format 1, one sealed snapshot after the header, is still read, and rewritten as format 2.
package enum StoreFormat {
    static let magic = Array("SESAMEST".utf8)
    /// The format written.
    static let version: UInt16 = 2
    /// The first format: the snapshot as a single sealed box after the header.
    static let singleBoxVersion: UInt16 = 1
    static let headerSize = 8 + 2 + 8
    static let lengthSize = 4
    /// A record's header: its sealed length and the length's complement.
    static let recordHeaderSize = 2 * lengthSize
    static let nonceSize = 12
    static let tagSize = 16
    /// The least a record's sealed part (nonce, ciphertext, tag) can be.
    static let minimumBoxSize = nonceSize + tagSize
    static let minimumSize = headerSize + minimumBoxSize

    /// What a file's clear header says.
    struct Header {
        /// Its format version.
        var version: UInt16
        /// The id of the key it was sealed with.
        var keyID: String
    }

    /// Where a record stands in its file: its index and the tag of the record before it, which
    /// together with the header make its associated data.
    struct Chain: Sendable {
        /// The index of the record this chain position seals.
        var index: UInt64 = 0
        /// The tag of the record before (zeros before record 0).
        var previousTag = [UInt8](repeating: 0, count: tagSize)

        func associatedData(header: Data) -> Data {
            var data = header
            withUnsafeBytes(of: index.bigEndian) { data.append(contentsOf: $0) }
            data.append(contentsOf: previousTag)
            return data
        }

        /// The position after a record with `tag`.
        func next(tag: some Collection<UInt8>) -> Chain {
            Chain(index: index + 1, previousTag: Array(tag))
        }
    }

    /// A whole format-2 file whose records hold `plaintexts`, in order (for the store fuzzer).
    package static func seal(records plaintexts: [Data], key: StoreKey) throws -> Data {
        let header = header(keyID: key.idBytes)
        var file = header
        var chain = Chain()
        for plaintext in plaintexts {
            let record = try sealRecord(plaintext, key: key, header: header, chain: chain)
            file.append(record.bytes)
            chain = record.next
        }
        return file
    }

    /// Seals `plaintext` as the record at `chain` in a file with `header`: the record's bytes
    /// (length, nonce, ciphertext, tag) and the position of the record after it.
    static func sealRecord(_ plaintext: Data, key: StoreKey, header: Data, chain: Chain) throws -> (
        bytes: Data, next: Chain
    ) {
        let box = try ChaChaPoly.seal(
            plaintext,
            using: key.key,
            nonce: ChaChaPoly.Nonce(),
            authenticating: chain.associatedData(header: header)
        )
        guard let length = UInt32(exactly: box.ciphertext.count + minimumBoxSize) else {
            throw CryptoKitError.incorrectParameterSize
        }
        var bytes = Data(capacity: recordHeaderSize + Int(length))
        withUnsafeBytes(of: length.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: (~length).bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: box.nonce)
        bytes.append(box.ciphertext)
        bytes.append(box.tag)
        return (bytes, chain.next(tag: box.tag))
    }

    /// Opens one record's sealed part (nonce, ciphertext, tag) at `chain`.
    static func openRecord(_ box: Data, key: StoreKey, header: Data, chain: Chain, path: String) throws(StoreError)
        -> (plaintext: Data, next: Chain)
    {
        do {
            let sealed = try ChaChaPoly.SealedBox(combined: box)
            let plaintext = try ChaChaPoly.open(
                sealed,
                using: key.key,
                authenticating: chain.associatedData(header: header)
            )
            return (plaintext, chain.next(tag: sealed.tag))
        } catch {
            throw .tampered(path: path)
        }
    }

    /// The format and key id a file names, after checking magic, size and version.
    static func header(of data: Data, path: String) throws(StoreError) -> Header {
        guard data.count >= minimumSize else {
            if data.count >= magic.count && !data.starts(with: magic) { throw .notAStore(path: path) }
            throw .truncated(path: path, bytes: data.count)
        }
        let bytes = [UInt8](data.prefix(headerSize))
        guard bytes.starts(with: magic) else { throw .notAStore(path: path) }
        let version = UInt16(bytes[8]) << 8 | UInt16(bytes[9])
        guard version == Self.version || version == singleBoxVersion else {
            throw .unsupportedVersion(path: path, found: version, supported: Self.version)
        }
        return Header(version: version, keyID: bytes[10..<18].hexadecimal)
    }

    /// Opens a format-1 file with `key`, whose id must be the one the header names.
    static func openSingleBox(_ data: Data, key: StoreKey, path: String) throws(StoreError) -> Data {
        let header = data.prefix(headerSize)
        do {
            let box = try ChaChaPoly.SealedBox(combined: data.dropFirst(headerSize))
            return try ChaChaPoly.open(box, using: key.key, authenticating: header)
        } catch {
            throw .tampered(path: path)
        }
    }

    /// The clear header of a format-2 file sealed with the key `keyID`.
    static func header(keyID: [UInt8]) -> Data {
        Data(magic) + [UInt8(version >> 8), UInt8(version & 0xff)] + keyID
    }
}
