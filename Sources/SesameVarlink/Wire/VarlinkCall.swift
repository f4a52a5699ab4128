import FoundationEssentials
import NIOCore
import SesameWire

/// One method call as received from a peer: `{"method": …, "parameters": {…}, "more": …, "oneway": …}`.
public struct VarlinkCall: Sendable {
    /// The fully qualified method name, e.g. `io.sesame.Accounts.List`.
    public var method: String
    /// The caller asks for a stream of replies.
    public var more: Bool
    /// The caller wants no reply at all.
    public var oneway: Bool
    /// Where the parameters are: a received call keeps the bytes of its `parameters` object
    /// (nil when absent or null) and decodes them only into the type its handler asks for,
    /// once, never into a `JSONValue` tree first.
    private let source: Source

    private enum Source: Sendable {
        /// The parameters' bytes, and where each of their members is in them (from the scan
        /// that checked the call).
        case frame(parameters: Data?, members: [JSONShape.Member], offset: Int)
        case members([String: JSONValue])
    }

    /// Creates a call, as a client sends it or a test builds it.
    public init(method: String, parameters: [String: JSONValue] = [:], more: Bool = false, oneway: Bool = false) {
        self.method = method
        self.source = .members(parameters)
        self.more = more
        self.oneway = oneway
    }

    /// The call's parameters as JSON values; an absent `parameters` member is an empty object.
    /// For tools and tests: handlers decode their own type with `decodeParameters`.
    public var parameters: [String: JSONValue] {
        switch source {
        case .members(let members): members
        case .frame: (try? decodeParameters([String: JSONValue].self)) ?? [:]
        }
    }

    /// The interface part of `method` (everything before the last dot).
    public var interface: String {
        guard let dot = lastDot else { return "" }
        return String(method[..<dot])
    }

    /// The unqualified method name (everything after the last dot).
    public var methodName: String {
        guard let dot = lastDot else { return method }
        return String(method[method.utf8.index(after: dot)...])
    }

    /// Where the last dot is, found among the UTF-8 bytes in place: searching the characters
    /// (grapheme breaking) cost a thousand instructions on every call, and the UTF-8 view's
    /// generic search still a third of that.
    private var lastDot: String.Index? {
        var copy = method
        guard let offset = copy.withUTF8({ $0.lastIndex(of: UInt8(ascii: ".")) }) else { return nil }
        // An index of `method` itself, not of the copy `withUTF8` may have made contiguous.
        return method.utf8.index(method.utf8.startIndex, offsetBy: offset)
    }

    /// Where among `names` (interface names in UTF-8) the call's interface is, compared in
    /// place: finding a call's interface makes no string.
    func interfaceIndex(among names: [[UInt8]]) -> Int? {
        var method = method
        return method.withUTF8 { bytes in
            guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")) else { return nil }
            let interface = UnsafeBufferPointer(rebasing: bytes[..<dot])
            return names.firstIndex { name in
                name.count == dot && name.withUnsafeBytes { JSONShape.same(UnsafeRawBufferPointer(interface), $0) }
            }
        }
    }

    /// Calls `body` with the unqualified method name's UTF-8 bytes, in place: finding a call's
    /// method makes no string either.
    func withMethodName<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        var method = method
        return method.withUTF8 { bytes in
            let start = bytes.lastIndex(of: UInt8(ascii: ".")).map { $0 + 1 } ?? 0
            return body(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start...])))
        }
    }

    /// How many members the parameters object has: a call answered at once from one parameter
    /// can tell that nothing more was asked.
    public var parameterCount: Int {
        switch source {
        case .members(let members): members.count
        case .frame(_, let members, _): members.count
        }
    }

    /// The string parameter `name`, read without a decoder: for calls whose one parameter is a
    /// string and that are answered at once, such as a token (JSONDecoder was a
    /// quarter of such a call's own CPU). The same verdicts as `decodeParameters` into a
    /// `Decodable` type with that one string member: absent or not a string is
    /// `InvalidParameter`, and other members are ignored.
    public func stringParameter(_ name: String) throws(VarlinkError) -> String {
        switch source {
        case .members(let members):
            guard case .string(let text)? = members[name] else { throw .invalidParameter(name) }
            return text
        case .frame(let parameters, let members, let offset):
            guard let parameters, let text = Self.string(name, in: parameters, members: members, offset: offset) else {
                throw .invalidParameter(name)
            }
            return text
        }
    }

    /// The text of the string member `name` of a parameters object the call's scan already
    /// checked (RFC 8259 grammar, UTF-8, no repeated names) and found `members` in (their
    /// ranges `offset` bytes further on, in the whole message); nil when absent or not a string.
    private static func string(_ name: String, in parameters: Data, members: [JSONShape.Member], offset: Int)
        -> String?
    {
        var name = name
        return parameters.withUnsafeBytes { bytes -> String? in
            let found = name.withUTF8 { key in
                members.first { $0.name.reads(UnsafeRawBufferPointer(key), in: bytes, offset: offset) }
            }
            guard let member = found else { return nil }
            let value = UnsafeRawBufferPointer(
                rebasing: bytes[(member.value.lowerBound - offset)..<(member.value.upperBound - offset)]
            )
            switch JSONShape.string(value) {
            case .text(let text)?: return text
            // Escapes are rare in an account id; Foundation reads them.
            case .escaped?: return try? JSONCoding.decode(String.self, from: Data(value))
            case nil: return nil
            }
        }
    }

    /// Decodes the parameters into a handler's own type; a mismatch names the offending parameter.
    public func decodeParameters<T: Decodable>(_ type: T.Type) throws(VarlinkError) -> T {
        do {
            switch source {
            case .frame(let parameters, _, _):
                return try JSONCoding.decode(type, from: parameters ?? Data("{}".utf8))
            case .members(let members):
                return try JSONValue.object(members).decode(as: type)
            }
        } catch let error as DecodingError {
            throw .invalidParameter(error.parameterName)
        } catch {
            throw .invalidParameter("parameters")
        }
    }
}

extension VarlinkCall {
    /// How deep arrays and objects may nest in a call; Sesame's own calls need 4.
    public static let maximumNesting = JSONShape.maximumNesting

    /// Parses one NUL-stripped frame; anything that is not a well-formed call is `InvalidMessage`.
    /// The envelope is read from the shape check's pass over the bytes, without a decoder; only
    /// the parameters' bytes are kept, for the handler to decode into its own type.
    public init(frame: ByteBuffer) throws(VarlinkProtocolError) {
        let read = frame.withUnsafeReadableBytes { bytes in
            Result { () throws(VarlinkProtocolError) in try ReceivedEnvelope(bytes) }
        }
        let envelope = try read.get()
        guard Self.isQualifiedMethodName(envelope.method) else {
            throw .invalidMessage("'\(envelope.method.prefix(200))' is not a qualified method name")
        }
        if envelope.upgrade == true {
            throw .invalidMessage("protocol upgrades are not supported")
        }
        self.method = envelope.method
        self.source = .frame(
            parameters: envelope.parameters,
            members: envelope.parameterMembers,
            offset: envelope.parametersOffset
        )
        self.more = envelope.more ?? false
        self.oneway = envelope.oneway ?? false
    }

    /// The wire form of this call, NUL terminator included.
    public func frame() throws -> ByteBuffer {
        let envelope = CallEnvelope<JSONValue>(
            method: method,
            parameters: parameters.isEmpty ? nil : .object(parameters),
            more: more ? true : nil,
            oneway: oneway ? true : nil
        )
        return ByteBuffer(bytes: try envelope.frame())
    }

    /// Varlink method names are `reverse.domain.Interface.Method`: at least two dots-separated
    /// parts, the last one starting with an upper-case letter.
    static func isQualifiedMethodName(_ name: String) -> Bool {
        var name = name
        return name.withUTF8(isQualifiedMethodName)
    }

    private static func isQualifiedMethodName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        // One pass over the bytes in place: this runs for every call, and the Character-based
        // version (split, Unicode properties) showed up in the profile at 5% of a GetToken, the
        // UTF-8 view's iterator at 3%.
        var parts = 1
        var partLength = 0
        var partStart: UInt8 = 0
        for byte in name {
            switch byte {
            case UInt8(ascii: "."):
                guard partLength > 0 else { return false }
                parts += 1
                partLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                if partLength == 0 { partStart = byte }
                partLength += 1
            default:
                return false
            }
        }
        return parts >= 3 && partLength > 0 && (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(partStart)
    }
}

extension DecodingError {
    /// Where in the document the failure is.
    var path: [any CodingKey] {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            context.codingPath
        case .keyNotFound(let key, let context):
            context.codingPath + [key]
        @unknown default:
            []
        }
    }

    /// The top-level parameter a decoding failure is about, for `InvalidParameter`.
    var parameterName: String {
        // Parameters are decoded from their own bytes, so the path starts at a parameter.
        path.first?.stringValue ?? "parameters"
    }

    /// A short, single-line explanation of why JSON did not decode; never echoes the input.
    static func summary(of error: any Error) -> String {
        guard let error = error as? DecodingError else { return "malformed JSON" }
        switch error {
        case .keyNotFound(let key, _): return "missing '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "wrong type for '\(path)'"
        case .dataCorrupted: return "malformed JSON"
        @unknown default: return "malformed JSON"
        }
    }
}
