extension JSONValue {
    /// Compact JSON text of this value (RFC 8259), as every Sesame message is written: object
    /// keys sorted, no spaces, slashes unescaped. Written here, not by a JSON encoder, so that
    /// a program of this module alone can make a call without linking Foundation.
    public var compactText: String {
        var text: [UInt8] = []
        appendCompactText(to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends the compact text of this value to `text`.
    func appendCompactText(to text: inout [UInt8]) {
        switch self {
        case .null: text += Array("null".utf8)
        case .bool(let value): text += Array((value ? "true" : "false").utf8)
        case .int(let value): text += Array(String(value).utf8)
        case .double(let value): text += Self.numberText(value)
        case .string(let value): Self.appendString(value, to: &text)
        case .array(let elements):
            text.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                element.appendCompactText(to: &text)
            }
            text.append(UInt8(ascii: "]"))
        case .object(let members):
            text.append(UInt8(ascii: "{"))
            // Sorted by their UTF-8 bytes, as swift-foundation's JSONEncoder sorts `.sortedKeys`.
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                Self.appendString(member.key, to: &text)
                text.append(UInt8(ascii: ":"))
                member.value.appendCompactText(to: &text)
            }
            text.append(UInt8(ascii: "}"))
        }
    }

    /// `value` as JSONEncoder writes a double: its shortest text that reads back as itself,
    /// without a `.0` on a whole number. JSON has no infinity or NaN (RFC 8259 §6); where the
    /// encoder refuses one, this writes null.
    private static func numberText(_ value: Double) -> [UInt8] {
        guard value.isFinite else { return Array("null".utf8) }
        let text = value.description
        return Array((text.hasSuffix(".0") ? text.dropLast(2) : text[...]).utf8)
    }

    /// `value` as a JSON string: the quote, the backslash and the control characters escaped
    /// (§7 requires no other), everything else as its UTF-8.
    private static func appendString(_ value: String, to text: inout [UInt8]) {
        text.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): text += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): text += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: text += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: text += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: text += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: text += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: text += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x00..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                text += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            default: text.append(byte)
            }
        }
        text.append(UInt8(ascii: "\""))
    }
}
