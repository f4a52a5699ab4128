import Crypto
import FoundationEssentials

/// A 256-bit key that seals the token store, with a short public identifier derived from it, so
/// a store can say which key it needs without revealing anything about the key.
public struct StoreKey: Sendable {
    /// The key material.
    let key: SymmetricKey
    /// The first 8 bytes of SHA-256 over the key: what the store header records.
    let idBytes: [UInt8]
    /// `idBytes` in hex, as messages show it.
    public var id: String { idBytes.hexadecimal }
    /// Where the key came from, for messages (`credential sesame.key`, a path, …).
    public let source: String

    /// Wraps 32 bytes of key material.
    public init(bytes: some ContiguousBytes, source: String) throws(StoreError) {
        let key = SymmetricKey(data: bytes)
        guard key.bitCount == 256 else {
            throw .unusableKey(
                source: source,
                reason: "a key is 32 bytes (or 64 hex digits), this is \(key.bitCount / 8) bytes"
            )
        }
        self.init(validated: key, source: source)
    }

    private init(validated key: SymmetricKey, source: String) {
        self.key = key
        self.idBytes = key.withUnsafeBytes { Array(SHA256.hash(data: $0).prefix(8)) }
        self.source = source
    }

    /// A fresh random key.
    public static func generate(source: String) -> StoreKey {
        StoreKey(validated: SymmetricKey(size: .bits256), source: source)
    }

    /// The key as a key file holds it: 64 hex digits and a newline.
    var fileContents: Data {
        Data((key.withUnsafeBytes { $0.hexadecimal } + "\n").utf8)
    }

    /// Reads a key file's contents: 32 raw bytes, or 64 hex digits with optional whitespace.
    package static func parse(_ data: Data, source: String) throws(StoreError) -> StoreKey {
        if data.count == 32 { return try StoreKey(bytes: data, source: source) }
        let text = String(String(decoding: data, as: UTF8.self).trimmingWhitespace())
        guard text.count == 64, let bytes = Self.hexBytes(text) else {
            throw .unusableKey(source: source, reason: "expected 32 raw bytes or 64 hex digits")
        }
        return try StoreKey(bytes: bytes, source: source)
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let h = hexValue(high), let l = hexValue(low) else { return nil }
            bytes.append(h << 4 | l)
        }
        return bytes
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Sequence<UInt8> {
    /// Lower-case hex, two digits a byte: how key ids and key files spell bytes.
    var hexadecimal: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] }, as: UTF8.self)
    }
}
