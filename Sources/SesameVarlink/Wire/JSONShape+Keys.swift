import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension JSONShape {
    /// An object's key as a parser reads it: where its text is in the message when it has no
    /// escape, nearly always, so that no copy is made of it (a copy per key was most
    /// of a small call's scan); its text unescaped otherwise (`"m\u0065thod"` is `method`).
    enum Key: Sendable {
        case raw(Range<Int>)
        case unescaped([UInt8])

        /// Runs `body` with the key's text. `bytes` are the message's, or a part of it that
        /// begins `offset` bytes into the message.
        func withText<R>(in bytes: UnsafeRawBufferPointer, offset: Int = 0, _ body: (UnsafeRawBufferPointer) -> R)
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
        func reads(_ text: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer, offset: Int = 0) -> Bool {
            withText(in: bytes, offset: offset) { same($0, text) }
        }

        /// Whether the key reads as `text`; `bytes` and `offset` as for `withText`.
        func reads(_ text: [UInt8], in bytes: UnsafeRawBufferPointer, offset: Int = 0) -> Bool {
            text.withUnsafeBytes { reads($0, in: bytes, offset: offset) }
        }
    }

    /// Whether two byte sequences are the same, compared with `memcmp` (the generic
    /// `elementsEqual` took twenty instructions a byte).
    static func same(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        guard first.count == second.count else { return false }
        guard first.count > 0, let one = first.baseAddress, let other = second.baseAddress else { return true }
        return memcmp(one, other, first.count) == 0
    }
}
