import FoundationEssentials

/// A call as it goes on the wire: `{"method": …, "parameters": {…}, "more": …, "oneway": …}`.
public struct CallEnvelope<Parameters: Encodable>: Encodable {
    /// The fully qualified method name.
    public var method: String
    /// The parameters object; nil leaves the member out.
    public var parameters: Parameters?
    /// Set when the caller asks for a stream of replies; nil leaves the member out.
    public var more: Bool?
    /// Set when the caller wants no reply; nil leaves the member out.
    public var oneway: Bool?

    /// A call of `method`.
    public init(method: String, parameters: Parameters?, more: Bool? = nil, oneway: Bool? = nil) {
        self.method = method
        self.parameters = parameters
        self.more = more
        self.oneway = oneway
    }

    /// The wire form, NUL terminator included.
    public func frame() throws -> [UInt8] {
        Array(try JSONCoding.encode(self)) + [0]
    }
}
