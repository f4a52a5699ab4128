/// A Varlink reply read without a decoder: checked whole against RFC 8259 by the scan sesamed
/// checks every call with (`JSONShape`), its top-level `error` and the members of its
/// `parameters` found in place, and a string parameter read when it holds no escape. What a
/// program of this module alone cannot read (an escaped string, any other value) it leaves to a
/// program that links a decoder: `sesamectl` hands such a reply's command line to
/// sesamectl-commands.
public struct ScannedReply: Sendable {
    /// The whole reply, without its NUL.
    private let bytes: [UInt8]
    private let parameters: [JSONShape.Member]

    /// The error's qualified name when the reply is an error reply, else nil.
    public let error: String?

    /// Reads `received` (one whole reply, without its NUL); nil when it is not JSON, not an
    /// object, or its `error` is not a string without escapes.
    public init?(_ received: [UInt8]) {
        let scanned = received.withUnsafeBytes { bytes in
            try? JSONShape.scan(bytes, depthLimit: JSONShape.maximumNesting, keepingMembersOf: Array("parameters".utf8))
        }
        guard let document = scanned ?? nil else { return nil }
        self.bytes = received
        self.parameters = document.inner ?? []
        let errorMember = received.withUnsafeBytes { bytes in
            document.members.first { $0.name.reads(Array("error".utf8), in: bytes) }
        }
        if let errorMember {
            guard let name = Self.text(at: errorMember.value, in: received) else { return nil }
            self.error = name
        } else {
            self.error = nil
        }
    }

    /// The string parameter `name` (of the reply's or the error's parameters), when it is a
    /// string without escapes; nil when absent, of another type, or escaped.
    public func stringParameter(_ name: String) -> String? {
        let key = Array(name.utf8)
        let member = bytes.withUnsafeBytes { bytes in parameters.first { $0.name.reads(key, in: bytes) } }
        return member.flatMap { Self.text(at: $0.value, in: bytes) }
    }

    /// The text of the string value at `range`, when it has no escape in it.
    private static func text(at range: Range<Int>, in bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { bytes in
            guard case .text(let text)? = JSONShape.string(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
                return nil
            }
            return text
        }
    }
}
