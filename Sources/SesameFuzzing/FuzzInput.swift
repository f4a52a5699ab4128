/// Carves typed choices out of a fuzzer's bytes, so one input can pick an operation, a status or
/// a split point and still hand the rest to a parser unchanged.
public struct FuzzInput {
    private var bytes: ArraySlice<UInt8>

    /// Wraps the fuzzer's input.
    public init(_ buffer: UnsafeRawBufferPointer) {
        self.bytes = ArraySlice(buffer)
    }

    /// Wraps bytes already carved out of another input.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes[...]
    }

    /// The bytes not taken yet.
    public var remaining: [UInt8] { Array(bytes) }

    /// Takes one byte, or 0 when the input is used up.
    public mutating func byte() -> UInt8 {
        bytes.popFirst() ?? 0
    }

    /// Takes one byte and reduces it to `0..<count`.
    public mutating func choice(_ count: Int) -> Int {
        Int(byte()) % max(count, 1)
    }

    /// Takes bytes up to (not including) the next `separator`, which is consumed; the rest when
    /// there is none.
    public mutating func part(until separator: UInt8) -> [UInt8] {
        guard let end = bytes.firstIndex(of: separator) else {
            defer { bytes = [] }
            return Array(bytes)
        }
        defer { bytes = bytes[(end + 1)...] }
        return Array(bytes[..<end])
    }
}
