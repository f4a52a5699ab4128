import FoundationEssentials
import SesameWire

/// A call's envelope as received — `{"method": …, "parameters": {…}, "more": …, "oneway": …,
/// "upgrade": …}` — read from the members `JSONShape` found, without a JSON decoder: the
/// envelope used to be decoded once to read it and the whole frame again for the parameters,
/// two of the largest costs of a small call. Members other than these are ignored, as the
/// Varlink specification's JSON readers do.
struct ReceivedEnvelope {
    var method: String
    /// The bytes of the `parameters` object; nil when absent or null.
    var parameters: Data?
    /// The members of the `parameters` object; their value ranges are in the whole message,
    /// `parametersOffset` bytes before where they are in `parameters`.
    var parameterMembers: [JSONShape.Member] = []
    var parametersOffset = 0
    var more: Bool?
    var oneway: Bool?
    var upgrade: Bool?

    private static let methodKey = Array("method".utf8)
    private static let parametersKey = Array("parameters".utf8)
    private static let moreKey = Array("more".utf8)
    private static let onewayKey = Array("oneway".utf8)
    private static let upgradeKey = Array("upgrade".utf8)

    /// Reads the envelope of one NUL-stripped frame.
    init(_ bytes: UnsafeRawBufferPointer) throws(VarlinkProtocolError) {
        let document: JSONShape.Document?
        do throws(JSONShape.ScanError) {
            document = try JSONShape.scan(
                bytes,
                depthLimit: VarlinkCall.maximumNesting,
                keepingMembersOf: Self.parametersKey
            )
        } catch {
            throw Self.refusal(error)
        }
        guard let document else { throw .invalidMessage("not a Varlink call: not an object") }
        var method: String?
        for member in document.members {
            let value = UnsafeRawBufferPointer(rebasing: bytes[member.value])
            let name = member.name
            if name.reads(Self.methodKey, in: bytes) {
                method = try Self.string(value, named: "method")
            } else if name.reads(Self.parametersKey, in: bytes) {
                parameters = try Self.object(value)
                parameterMembers = document.inner ?? []
                parametersOffset = member.value.lowerBound
            } else if name.reads(Self.moreKey, in: bytes) {
                more = try Self.boolean(value, named: "more")
            } else if name.reads(Self.onewayKey, in: bytes) {
                oneway = try Self.boolean(value, named: "oneway")
            } else if name.reads(Self.upgradeKey, in: bytes) {
                upgrade = try Self.boolean(value, named: "upgrade")
            }
        }
        guard let method else { throw .invalidMessage("not a Varlink call: missing 'method'") }
        self.method = method
    }

    private static func refusal(_ problem: JSONShape.ScanError) -> VarlinkProtocolError {
        switch problem {
        case .tooDeep(let limit):
            return .invalidMessage("nested deeper than \(limit) levels")
        case .duplicateKey(let key):
            let shown = String(key.unicodeScalars.map { (0x20..<0x7f).contains($0.value) ? Character($0) : "?" })
            return .invalidMessage("an object names '\(shown)' twice")
        case .keyNotASCII:
            return .invalidMessage("a key is not an ASCII name")
        case .malformed(let what, let offset):
            return .invalidMessage("not a Varlink call: malformed JSON (\(what) at byte \(offset))")
        }
    }

    /// A JSON string's text; the scan already checked its escapes and its UTF-8.
    private static func string(_ value: UnsafeRawBufferPointer, named name: String) throws(VarlinkProtocolError)
        -> String
    {
        switch JSONShape.string(value) {
        case .text(let text)?: return text
        // Escapes are rare in a method name; Foundation reads them.
        case .escaped?: if let text = try? JSONCoding.decode(String.self, from: Data(value)) { return text }
        case nil: break
        }
        throw .invalidMessage("not a Varlink call: wrong type for '\(name)'")
    }

    /// The bytes of an object, nil for null; anything else is refused.
    private static func object(_ value: UnsafeRawBufferPointer) throws(VarlinkProtocolError) -> Data? {
        switch value.first {
        case UInt8(ascii: "{"): return Data(value)
        case UInt8(ascii: "n"): return nil
        default: throw .invalidMessage("'parameters' must be an object")
        }
    }

    /// true, false, or null (absent).
    private static func boolean(_ value: UnsafeRawBufferPointer, named name: String) throws(VarlinkProtocolError)
        -> Bool?
    {
        switch value.first {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        case UInt8(ascii: "n"): return nil
        default: throw .invalidMessage("not a Varlink call: wrong type for '\(name)'")
        }
    }
}
