import FoundationEssentials

/// The JSON coders every message on the wire goes through, so encoding choices live in one place
/// (sorted keys, unescaped slashes, ISO 8601 dates), for the daemon and every client alike.
public enum JSONCoding {
    /// An encoder with the wire's settings.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// `value` as JSON text with the wire's settings.
    public static func encode(_ value: some Encodable) throws -> Data {
        try encoder().encode(value)
    }

    /// JSON text as `type`, with the wire's settings.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: data)
    }
}
