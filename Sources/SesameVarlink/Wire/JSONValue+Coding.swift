import FoundationEssentials

extension JSONValue {
    /// Compact JSON text of this value, for messages and logs.
    public var compactText: String {
        guard let data = try? JSONCoding.encode(self) else { return "<unencodable>" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Decodes this value into a `Decodable` type.
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        try JSONCoding.decode(type, from: JSONCoding.encode(self))
    }

    /// Encodes any `Encodable` value into its JSON value.
    public init(encoding value: some Encodable) throws {
        self = try JSONCoding.decode(JSONValue.self, from: JSONCoding.encode(value))
    }
}
