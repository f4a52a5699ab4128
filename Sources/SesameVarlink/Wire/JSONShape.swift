import Foundation

/// What one pass over a message's bytes finds before any decoding: nesting deeper than the
/// limit, or an object that names a key twice. RFC 8259 §4 leaves repeated names to each
/// parser, and parsers differ (Foundation keeps the first, many keep the last), so a proxy
/// that filters calls could read another call than sesamed runs; Sesame refuses them instead.
/// The pass is linear in the message's size whatever its shape, so a deeply nested message
/// costs no more to refuse than a flat one of the same length.
enum JSONShape {
    /// Why a message's shape is refused.
    enum Problem: Error, Equatable {
        /// Arrays and objects nest deeper than `limit`.
        case tooDeep(limit: Int)
        /// An object names `key` more than once.
        case duplicateKey(String)
        /// A key is not ASCII. Varlink names are ASCII identifiers, and two non-ASCII spellings
        /// can be the same key to a parser that compares canonically equivalent strings.
        case keyNotASCII
    }

    /// An open array or object, and for an object the keys seen so far.
    private struct Container {
        var keys: Set<[UInt8]>?
        var expectsKey = false
    }

    /// Checks `bytes`, assumed to be JSON (what is not JSON is left to the decoder to refuse).
    /// It reads raw memory, not a collection: at about a nanosecond a byte even unoptimised, a
    /// 1 MiB message costs milliseconds, not the half second a generic index walk cost.
    static func check(_ bytes: UnsafeRawBufferPointer, depthLimit: Int) throws(Problem) {
        var open: [Container] = []
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard open.count < depthLimit else { throw .tooDeep(limit: depthLimit) }
                let isObject = byte == UInt8(ascii: "{")
                open.append(Container(keys: isObject ? [] : nil, expectsKey: isObject))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = open.popLast()
            case UInt8(ascii: ","):
                if open.last?.keys != nil { open[open.count - 1].expectsKey = true }
            case UInt8(ascii: "\""):
                let start = index
                index = endOfString(bytes, from: index)
                guard let container = open.last, container.expectsKey else { continue }
                open[open.count - 1].expectsKey = false
                let key = unescaped(Array(bytes[start..<max(start, index - 1)]))
                guard key.allSatisfy({ $0 < 0x80 }) else { throw .keyNotASCII }
                guard open[open.count - 1].keys?.insert(key).inserted == true else {
                    throw .duplicateKey(String(decoding: key.prefix(64), as: UTF8.self))
                }
            default:
                continue
            }
        }
    }

    /// Where the string whose opening quote precedes `start` ends: just after its closing quote,
    /// or the end of the bytes.
    private static func endOfString(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") {
                index += 2
            } else {
                index += 1
                if byte == UInt8(ascii: "\"") { return index }
            }
        }
        return count
    }

    /// A key as a parser reads it: `"m\u0065thod"` is `method`. Keys without escapes, nearly
    /// all of them, are taken as they are.
    private static func unescaped(_ raw: [UInt8]) -> [UInt8] {
        guard raw.contains(UInt8(ascii: "\\")) else { return raw }
        let quoted = Data([UInt8(ascii: "\"")] + raw + [UInt8(ascii: "\"")])
        guard let text = try? JSONDecoder().decode(String.self, from: quoted) else { return raw }
        return Array(text.utf8)
    }
}
