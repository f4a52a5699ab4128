/// One pass over a message's bytes before anything is decoded: the JSON grammar of RFC 8259
/// checked strictly (§2–§8: values, objects, arrays, numbers, strings and their escapes, UTF-8),
/// nesting deeper than the limit refused, an object that names a key twice refused, and where
/// each member of the top-level object lies, so a call's envelope is read without a decoder and
/// its parameters are decoded once, from their own bytes.
///
/// RFC 8259 §4 leaves repeated names to each parser, and parsers differ (Foundation keeps the
/// first, many keep the last), so a proxy that filters calls could read another call than
/// sesamed runs; Sesame refuses them instead. The pass is linear in the message's size whatever
/// its shape (recursion stops at the depth limit), so a deeply nested message costs no more to
/// refuse than a flat one of the same length.
package enum JSONShape {
    /// Why a message's shape is refused.
    package enum ScanError: Error, Equatable {
        /// Arrays and objects nest deeper than `limit`.
        case tooDeep(limit: Int)
        /// An object names `key` more than once.
        case duplicateKey(String)
        /// A key is not ASCII. Varlink names are ASCII identifiers, and two non-ASCII spellings
        /// can be the same key to a parser that compares canonically equivalent strings.
        case keyNotASCII
        /// Not JSON: what is wrong, and at which byte.
        case malformed(String, offset: Int)
    }

    /// How deep arrays and objects may nest in a message Sesame reads (`VarlinkCall` and
    /// `sesamectl token`'s reply alike); Sesame's own messages need 4.
    package static let maximumNesting = 64

    /// A member of a kept object: its name as a parser reads it, and its value's bytes.
    package struct Member: Sendable {
        package var name: Key
        package var value: Range<Int>
    }

    /// What a scan found in a top-level object.
    package struct Document {
        /// Its members, in order.
        package var members: [Member]
        /// The members of its member named as asked, when that is an object, in order; their
        /// value ranges are in the whole message's bytes.
        package var inner: [Member]?
    }

    /// Checks `bytes` and returns the top-level object's members and, if `inner` names one of
    /// them that is an object, that object's members too (a call's parameters, so that one is
    /// read without a second pass); nil when the bytes are JSON but not an object.
    package static func scan(_ bytes: UnsafeRawBufferPointer, depthLimit: Int, keepingMembersOf inner: [UInt8]? = nil)
        throws(ScanError) -> Document?
    {
        // Structure is ASCII; only strings may hold other bytes, and all of them must be UTF-8
        // (§8.1). Checked once for the whole message, and only when a byte is not ASCII.
        if bytes.contains(where: { $0 >= 0x80 }), String(validating: bytes, as: UTF8.self) == nil {
            throw .malformed("not UTF-8", offset: 0)
        }
        var scanner = Scanner(bytes: bytes, depthLimit: depthLimit, innerKey: inner)
        guard let members = try scanner.document() else { return nil }
        return Document(members: members, inner: scanner.inner)
    }

    /// The grammar, one byte at a time; objects and arrays recurse at most `depthLimit` deep.
    struct Scanner {
        let bytes: UnsafeRawBufferPointer
        let depthLimit: Int
        /// The top-level member whose object's members are kept as `inner`.
        let innerKey: [UInt8]?
        var index = 0
        var topLevel: [Member]?
        var inner: [Member]?
        /// The value being read is the top-level member named `innerKey`.
        private var inInnerValue = false
        /// The keys of every object being read, the innermost one's last: one list for the
        /// whole message, where each object checks its own for a key named twice.
        private var keys: [Key] = []

        init(bytes: UnsafeRawBufferPointer, depthLimit: Int, innerKey: [UInt8]?) {
            self.bytes = bytes
            self.depthLimit = depthLimit
            self.innerKey = innerKey
            keys.reserveCapacity(8)
        }

        /// The byte at `index`, or NUL past the end (NUL never starts or continues a token).
        var current: UInt8 { index < bytes.count ? bytes[index] : 0 }

        func malformed(_ what: String) -> ScanError { .malformed(what, offset: index) }

        /// §2: one value with optional whitespace around it, and nothing else.
        mutating func document() throws(ScanError) -> [Member]? {
            skipWhitespace()
            let isObject = current == UInt8(ascii: "{")
            try value(depth: 0)
            skipWhitespace()
            guard index == bytes.count else { throw malformed("more after the JSON value") }
            return isObject ? topLevel : nil
        }

        private mutating func value(depth: Int) throws(ScanError) {
            skipWhitespace()
            switch current {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: throw malformed(index < bytes.count ? "unexpected character" : "unexpected end")
            }
        }

        /// §4. The members of the top-level object (depth 1) are kept with their values' bytes,
        /// and those of the object that is its member `innerKey` (depth 2, inside that value).
        private mutating func object(depth: Int) throws(ScanError) {
            guard depth <= depthLimit else { throw .tooDeep(limit: depthLimit) }
            index += 1
            let isInner = depth == 2 && inInnerValue
            let keeps = depth == 1 || isInner
            let firstKey = keys.count
            defer { keys.removeSubrange(firstKey...) }
            var manyKeys: Set<[UInt8]>?
            var members: [Member] = []
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                index += 1
                if depth == 1 { topLevel = [] }
                if isInner { inner = [] }
                return
            }
            // Room for a call's envelope at once, rather than growing one member at a time.
            if keeps { members.reserveCapacity(8) }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw malformed("expected a key") }
                let key = try Self.key(at: try string(), in: bytes)
                try remember(key, keysFrom: firstKey, many: &manyKeys)
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw malformed("expected ':'") }
                index += 1
                skipWhitespace()
                let start = index
                if depth == 1 { inInnerValue = innerKey.map { key.reads($0, in: bytes) } ?? false }
                try value(depth: depth)
                if depth == 1 { inInnerValue = false }
                if keeps { members.append(Member(name: key, value: start..<index)) }
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","):
                    index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    if depth == 1 { topLevel = members }
                    if isInner { inner = members }
                    return
                default:
                    throw malformed("expected ',' or '}'")
                }
            }
        }

        /// §5.
        private mutating func array(depth: Int) throws(ScanError) {
            guard depth <= depthLimit else { throw .tooDeep(limit: depthLimit) }
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                try value(depth: depth)
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return
                default: throw malformed("expected ',' or ']'")
                }
            }
        }

        /// The key whose text (between its quotes) is at `range`, which must be ASCII once
        /// unescaped. Keys without escapes, nearly all of them, are not copied.
        private static func key(at range: Range<Int>, in bytes: UnsafeRawBufferPointer) throws(ScanError) -> Key {
            let raw = bytes[range]
            guard raw.contains(UInt8(ascii: "\\")) else {
                guard raw.allSatisfy({ $0 < 0x80 }) else { throw .keyNotASCII }
                return .raw(range)
            }
            guard let text = unescapedASCII(raw) else { throw .keyNotASCII }
            return .unescaped(text)
        }

        /// Adds `key` to the keys of the object whose keys begin at `first`, or throws if it
        /// named it already. A handful are compared in place (a call has a few); past
        /// `fewKeys` they go into a set, so a hostile object of 100,000 keys stays linear.
        private mutating func remember(_ key: Key, keysFrom first: Int, many: inout Set<[UInt8]>?) throws(ScanError) {
            if many == nil {
                let bytes = bytes
                for known in keys[first...] where known.withText(in: bytes, { key.reads($0, in: bytes) }) {
                    throw Self.duplicate(key, in: bytes)
                }
                keys.append(key)
                guard keys.count - first > Self.fewKeys else { return }
                many = Set(keys[first...].map { Self.text(of: $0, in: bytes) })
            } else if many?.insert(Self.text(of: key, in: bytes)).inserted == false {
                throw Self.duplicate(key, in: bytes)
            }
        }

        private static let fewKeys = 16

        private static func text(of key: Key, in bytes: UnsafeRawBufferPointer) -> [UInt8] {
            key.withText(in: bytes) { Array($0) }
        }

        private static func duplicate(_ key: Key, in bytes: UnsafeRawBufferPointer) -> ScanError {
            .duplicateKey(String(decoding: text(of: key, in: bytes).prefix(64), as: UTF8.self))
        }
    }
}
