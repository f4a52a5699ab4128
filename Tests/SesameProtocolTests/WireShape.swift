import Foundation

/// The wire shape of a `Decodable` type, learned by decoding one from a decoder that answers
/// every question with a placeholder and writes the question down: the Codable conformance is
/// the one Swift spelling of the contract, so this is what the `.varlink` files are held to.
enum WireShape {
    /// The shape of `type` in the interface language's terms.
    static func of<T: Decodable>(_ type: T.Type) throws -> IDLType {
        try Recorder.shape(of: type).type
    }
}

/// An enum sent as a string; its cases are part of the contract.
protocol WireEnum {
    static var wireCases: [String] { get }
    static var placeholder: Self { get }
}

extension WireEnum where Self: CaseIterable & RawRepresentable, RawValue == String {
    static var wireCases: [String] { allCases.map(\.rawValue) }
    // The conforming enums all have cases; an empty one could not be sent at all.
    static var placeholder: Self { allCases.first! }
}

/// `[Element]` and `[String: Value]`, whose element types an empty container never asks for.
private protocol WireCollection {
    static func shape() throws -> IDLType
    static var empty: Self { get }
}

extension Array: WireCollection where Element: Decodable {
    static func shape() throws -> IDLType { .array(try Recorder.shape(of: Element.self).type) }
    static var empty: Self { [] }
}

extension Dictionary: WireCollection where Key == String, Value: Decodable {
    static func shape() throws -> IDLType { .map(try Recorder.shape(of: Value.self).type) }
    static var empty: Self { [:] }
}

private final class Recorder: Decoder {
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]
    var fields: [IDLField] = []
    /// What a single-value container was asked for, when the type is not a struct.
    var single: IDLType?

    /// A placeholder of `type` and its shape.
    static func shape<T: Decodable>(of type: T.Type) throws -> (value: T, type: IDLType) {
        if let scalar = scalar(type) { return scalar }
        if let wireEnum = type as? any WireEnum.Type {
            // `placeholder` is a `T`: `wireEnum` is `T`'s own metatype.
            return (wireEnum.placeholder as! T, .enumeration(wireEnum.wireCases))
        }
        if let collection = type as? any WireCollection.Type {
            // `collection` is `T`'s own metatype, so its `empty` is a `T`.
            return (collection.empty as! T, try collection.shape())
        }
        let recorder = Recorder()
        let value = try T(from: recorder)
        return (value, recorder.single ?? .structure(recorder.fields))
    }

    private static func scalar<T>(_ type: T.Type) -> (value: T, type: IDLType)? {
        let table: [(Any.Type, Any, IDLType)] = [
            (String.self, "", .string), (Bool.self, false, .bool), (Int.self, 0, .int), (Int64.self, Int64(0), .int),
            (Int32.self, Int32(0), .int), (UInt32.self, UInt32(0), .int), (UInt64.self, UInt64(0), .int),
            (Double.self, 0.0, .float), (Date.self, Date(), .string),
        ]
        guard let (_, value, shape) = table.first(where: { $0.0 == type }) else { return nil }
        // The row was chosen by `type`, so its value is a `T`.
        return (value as! T, shape)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(recorder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(recorder: self) }

    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let (value, shape) = try Recorder.shape(of: type)
            recorder.fields.append(IDLField(name: key.stringValue, type: shape))
            return value
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            let (_, shape) = try Recorder.shape(of: type)
            recorder.fields.append(IDLField(name: key.stringValue, type: .optional(shape)))
            return nil
        }

        // Synthesized Codable calls these for optional scalars; their default implementations
        // would ask `decode` and record the field as required.
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(type, key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(type, key) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }

        private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
            try decodeIfPresent(type, forKey: key)
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        { throw IDLError.syntax }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { Unkeyed() }
        func superDecoder() throws -> any Decoder { recorder }
        func superDecoder(forKey key: Key) throws -> any Decoder { recorder }
    }

    private struct Unkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }
        mutating func decodeNil() throws -> Bool { false }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw IDLError.syntax }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        { throw IDLError.syntax }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { self }
        mutating func superDecoder() throws -> any Decoder { throw IDLError.syntax }
    }

    private struct Single: SingleValueDecodingContainer {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (value, shape) = try Recorder.shape(of: type)
            recorder.single = shape
            return value
        }
    }
}
