#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension JSONShape {
    /// An object's key as a parser reads it: where its text is in the message when it has no
    /// escape, nearly always, so that no copy is made of it (a copy per key was most
    /// of a small call's scan); its text unescaped otherwise (`"m\u0065thod"` is `method`).
    package enum Key: Sendable {
        case raw(Range<Int>)
        case unescaped([UInt8])

        /// Runs `body` with the key's text. `bytes` are the message's, or a part of it that
        /// begins `offset` bytes into the message.
        package func withText<R>(
            in bytes: UnsafeRawBufferPointer,
            offset: Int = 0,
            _ body: (UnsafeRawBufferPointer) -> R
        )
            -> R
        {
            switch self {
            case .raw(let range):
                body(UnsafeRawBufferPointer(rebasing: bytes[(range.lowerBound - offset)..<(range.upperBound - offset)]))
            case .unescaped(let text):
                text.withUnsafeBytes(body)
            }
        }

        /// Whether the key reads as `text`; `bytes` and `offset` as for `withText`.
        package func reads(_ text: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer, offset: Int = 0) -> Bool {
            withText(in: bytes, offset: offset) { same($0, text) }
        }

        /// Whether the key reads as `text`; `bytes` and `offset` as for `withText`.
        package func reads(_ text: [UInt8], in bytes: UnsafeRawBufferPointer, offset: Int = 0) -> Bool {
            text.withUnsafeBytes { reads($0, in: bytes, offset: offset) }
        }
    }

    /// Whether two byte sequences are the same, compared with `memcmp` (the generic
    /// `elementsEqual` took twenty instructions a byte).
    package static func same(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        guard first.count == second.count else { return false }
        guard first.count > 0, let one = first.baseAddress, let other = second.baseAddress else { return true }
        return memcmp(one, other, first.count) == 0
    }

    /// How a value the scan checked reads as a string, without a decoder.
    package enum StringValue: Equatable {
        /// A string with no escape in it (nearly every one): its text, the bytes between its quotes.
        case text(String)
        /// A string with an escape in it, left to a decoder.
        case escaped
    }

    /// `value` (one value's bytes, as a scan found them) read as a string; nil when it is not one.
    package static func string(_ value: UnsafeRawBufferPointer) -> StringValue? {
        guard value.count >= 2, value.first == UInt8(ascii: "\"") else { return nil }
        let inside = UnsafeRawBufferPointer(rebasing: value.dropFirst().dropLast())
        guard !inside.contains(UInt8(ascii: "\\")) else { return .escaped }
        return .text(String(decoding: inside, as: UTF8.self))
    }

    /// The text of a key between its quotes, when it is ASCII once its escapes (§7) are read, as
    /// every Varlink name is; nil when an escape stands for anything else (`\u00e9`, a surrogate
    /// pair) or is not one. Only the escapes' meaning is needed, so no JSON decoder is linked for it.
    static func unescapedASCII(_ raw: UnsafeRawBufferPointer.SubSequence) -> [UInt8]? {
        var text: [UInt8] = []
        text.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            index += 1
            guard byte == UInt8(ascii: "\\") else {
                guard byte < 0x80 else { return nil }
                text.append(byte)
                continue
            }
            guard index < raw.endIndex else { return nil }
            let kind = raw[index]
            index += 1
            switch kind {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(kind)
            case UInt8(ascii: "b"): text.append(0x08)
            case UInt8(ascii: "f"): text.append(0x0C)
            case UInt8(ascii: "n"): text.append(0x0A)
            case UInt8(ascii: "r"): text.append(0x0D)
            case UInt8(ascii: "t"): text.append(0x09)
            case UInt8(ascii: "u"):
                guard raw.endIndex - index >= 4 else { return nil }
                var unit = 0
                for digit in raw[index..<(index + 4)] {
                    guard let value = Scanner.hexValue(digit) else { return nil }
                    unit = unit << 4 | Int(value)
                }
                index += 4
                guard unit < 0x80 else { return nil }
                text.append(UInt8(unit))
            default: return nil
            }
        }
        return text
    }
}
