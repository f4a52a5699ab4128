import FoundationEssentials

/// The JSON coders every message on the wire goes through, so encoding choices live in one place.
enum JSONCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func encode(_ value: some Encodable) throws -> Data {
        try encoder().encode(value)
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: data)
    }
}

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
