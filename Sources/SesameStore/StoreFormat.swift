import Crypto
import Foundation

/// The store file: a clear header saying what it is, which format and which key, then the
/// session snapshot sealed with ChaCha20-Poly1305. The header is the AEAD's associated data, so
/// changing any of it fails authentication just as changing the body does.
///
/// ```
/// magic "SESAMEST" (8) | format version, big-endian (2) | key id (8) | nonce (12) | ciphertext | tag (16)
/// ```
package enum StoreFormat {
    static let magic = Array("SESAMEST".utf8)
    static let version: UInt16 = 1
    static let headerSize = 8 + 2 + 8
    static let nonceSize = 12
    static let tagSize = 16
    static let minimumSize = headerSize + nonceSize + tagSize

    /// Seals `plaintext` under `key` with a fresh nonce.
    package static func seal(_ plaintext: Data, key: StoreKey) throws -> Data {
        try sealedParts(plaintext, key: key).reduce(Data(), +)
    }

    /// The sealed file in its two parts, the header and the sealed box (nonce, ciphertext, tag),
    /// to be written one after the other without copying megabytes into one buffer first.
    static func sealedParts(_ plaintext: Data, key: StoreKey) throws -> [Data] {
        let header = header(keyID: key.idBytes)
        let box = try ChaChaPoly.seal(plaintext, using: key.key, nonce: ChaChaPoly.Nonce(), authenticating: header)
        return [header, box.combined]
    }

    /// The key id a sealed file names, after checking magic, size and version.
    static func keyID(of data: Data, path: String) throws(StoreError) -> String {
        guard data.count >= minimumSize else {
            if data.count >= magic.count && !data.starts(with: magic) { throw .notAStore(path: path) }
            throw .truncated(path: path, bytes: data.count)
        }
        let bytes = [UInt8](data.prefix(headerSize))
        guard bytes.starts(with: magic) else { throw .notAStore(path: path) }
        let version = UInt16(bytes[8]) << 8 | UInt16(bytes[9])
        guard version == Self.version else {
            throw .unsupportedVersion(path: path, found: version, supported: Self.version)
        }
        return bytes[10..<18].hexadecimal
    }

    /// Opens a sealed file with `key`, whose id must be the one the header names.
    static func open(_ data: Data, key: StoreKey, path: String) throws(StoreError) -> Data {
        let header = data.prefix(headerSize)
        do {
            let box = try ChaChaPoly.SealedBox(combined: data.dropFirst(headerSize))
            return try ChaChaPoly.open(box, using: key.key, authenticating: header)
        } catch {
            throw .tampered(path: path)
        }
    }

    private static func header(keyID: [UInt8]) -> Data {
        Data(magic) + [UInt8(version >> 8), UInt8(version & 0xff)] + keyID
    }
}
