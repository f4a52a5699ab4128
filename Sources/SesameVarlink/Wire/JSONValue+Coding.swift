import FoundationEssentials
import SesameWire

extension JSONValue {
    /// Decodes this value into a `Decodable` type.
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        try JSONCoding.decode(type, from: JSONCoding.encode(self))
    }

    /// Encodes any `Encodable` value into its JSON value.
    public init(encoding value: some Encodable) throws {
        self = try JSONCoding.decode(JSONValue.self, from: JSONCoding.encode(value))
    }
}
