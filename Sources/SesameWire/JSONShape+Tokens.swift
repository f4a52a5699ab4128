/// The scanner's tokens (RFC 8259 §6, §7): strings with their escapes, numbers, literals and
/// whitespace, each read at `index` and left behind it.
extension JSONShape.Scanner {
    /// §7: reads a string whose opening quote is at `index`; the bytes between the quotes.
    mutating func string() throws(JSONShape.ScanError) -> Range<Int> {
        index += 1
        let start = index
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return start..<(index - 1)
            case UInt8(ascii: "\\"):
                try escape()
            case 0..<0x20:
                throw malformed("a control character in a string")
            default:
                index += 1
            }
        }
        throw malformed("unterminated string")
    }

    /// §7: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` or `\u` and four hex digits. A
    /// surrogate must come in a pair (§8.2 leaves a lone one unpredictable; I-JSON, RFC 7493
    /// §2.1, forbids it, and so does Foundation, which decodes the parameters).
    mutating func escape() throws(JSONShape.ScanError) {
        index += 1
        switch current {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 1
        case UInt8(ascii: "u"):
            let unit = try codeUnit()
            if (0xDC00...0xDFFF).contains(unit) { throw malformed("a lone surrogate") }
            if (0xD800...0xDBFF).contains(unit) {
                guard current == UInt8(ascii: "\\") else { throw malformed("a lone surrogate") }
                index += 1
                guard current == UInt8(ascii: "u"), (0xDC00...0xDFFF).contains(try codeUnit()) else {
                    throw malformed("a lone surrogate")
                }
            }
        default:
            throw malformed("a bad escape")
        }
    }

    /// The four hex digits after the `u` at `index`.
    mutating func codeUnit() throws(JSONShape.ScanError) -> UInt16 {
        index += 1
        var unit: UInt16 = 0
        for _ in 0..<4 {
            guard let digit = Self.hexValue(current) else { throw malformed("a bad \\u escape") }
            unit = unit << 4 | UInt16(digit)
            index += 1
        }
        return unit
    }

    /// §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, and within a double's
    /// range (§6 lets an implementation limit it; I-JSON, RFC 7493 §2.2, and Foundation do).
    mutating func number() throws(JSONShape.ScanError) {
        let start = index
        try numberGrammar()
        // Only a long number or one with an exponent can leave a double's range.
        guard index - start > 15 || bytes[start..<index].contains(where: { $0 | 0x20 == UInt8(ascii: "e") })
        else { return }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else { throw malformed("a number out of range") }
    }

    mutating func numberGrammar() throws(JSONShape.ScanError) {
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if skipDigits() == 0 {
            throw malformed("a bad number")
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() > 0 else { throw malformed("a bad number") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw malformed("a bad number") }
        }
    }

    mutating func skipDigits() -> Int {
        let start = index
        while (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(current) { index += 1 }
        return index - start
    }

    mutating func literal(_ word: StaticString) throws(JSONShape.ScanError) {
        let length = word.utf8CodeUnitCount
        guard index + length <= bytes.count,
            word.withUTF8Buffer({ $0.elementsEqual(bytes[index..<(index + length)]) })
        else { throw malformed("unexpected character") }
        index += length
    }

    /// §2: space, tab, line feed, carriage return.
    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
