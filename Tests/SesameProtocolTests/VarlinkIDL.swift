import Foundation

/// A Varlink type as an interface description spells it (varlink.org, "Interface Definition").
indirect enum IDLType: Equatable, CustomStringConvertible {
    case bool, int, float, string, object
    case optional(IDLType)
    case array(IDLType)
    case map(IDLType)
    case enumeration([String])
    case structure([IDLField])
    case named(String)

    var description: String {
        switch self {
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .string: "string"
        case .object: "object"
        case .optional(let inner): "?\(inner)"
        case .array(let inner): "[]\(inner)"
        case .map(let inner): "[string]\(inner)"
        case .enumeration(let cases): "(\(cases.joined(separator: ", ")))"
        case .structure(let fields): "(\(fields.map { "\($0.name): \($0.type)" }.joined(separator: ", ")))"
        case .named(let name): name
        }
    }
}

/// One field of a struct, parameter list or reply.
struct IDLField: Equatable {
    var name: String
    var type: IDLType
}

/// One parsed `.varlink` file: its types, methods and errors by name.
struct IDLInterface {
    var name = ""
    var types: [String: IDLType] = [:]
    var methods: [String: (parameters: [IDLField], reply: [IDLField])] = [:]
    var errors: [String: [IDLField]] = [:]

    /// Parses an interface description; comments are dropped.
    init(parsing text: String) throws {
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        }
        var scanner = IDLScanner(uncommented.joined(separator: "\n"))
        while let keyword = scanner.word() {
            switch keyword {
            case "interface": name = try scanner.required(scanner.word())
            case "type":
                let typeName = try scanner.required(scanner.word())
                types[typeName] = try scanner.parenthesized()
            case "method":
                let methodName = try scanner.required(scanner.word())
                guard case .structure(let parameters) = try scanner.parenthesized() else { throw IDLError.syntax }
                try scanner.expect("->")
                guard case .structure(let reply) = try scanner.parenthesized() else { throw IDLError.syntax }
                methods[methodName] = (parameters, reply)
            case "error":
                let errorName = try scanner.required(scanner.word())
                guard case .structure(let fields) = try scanner.parenthesized() else { throw IDLError.syntax }
                errors[errorName] = fields
            default: throw IDLError.syntax
            }
        }
    }

    /// `type` with named types replaced by their definitions.
    func resolved(_ type: IDLType) -> IDLType {
        switch type {
        case .named(let name): types[name].map(resolved) ?? type
        case .optional(let inner): .optional(resolved(inner))
        case .array(let inner): .array(resolved(inner))
        case .map(let inner): .map(resolved(inner))
        case .structure(let fields): .structure(fields.map { IDLField(name: $0.name, type: resolved($0.type)) })
        default: type
        }
    }
}

enum IDLError: Error { case syntax }

/// Reads words, punctuation and type expressions of the interface language.
private struct IDLScanner {
    private let characters: [Character]
    private var index = 0

    init(_ text: String) { characters = Array(text) }

    mutating func skipSpace() {
        while index < characters.count, characters[index].isWhitespace { index += 1 }
    }

    mutating func word() -> String? {
        skipSpace()
        let start = index
        while index < characters.count,
            characters[index].isLetter || characters[index].isNumber
                || characters[index] == "_" || characters[index] == "."
        {
            index += 1
        }
        return start == index ? nil : String(characters[start..<index])
    }

    func required(_ word: String?) throws -> String {
        guard let word else { throw IDLError.syntax }
        return word
    }

    mutating func expect(_ text: String) throws {
        skipSpace()
        for character in text {
            guard index < characters.count, characters[index] == character else { throw IDLError.syntax }
            index += 1
        }
    }

    mutating func peek() -> Character? {
        skipSpace()
        return index < characters.count ? characters[index] : nil
    }

    /// `(name: type, …)` as a structure, or `(a, b, …)` as an enumeration.
    mutating func parenthesized() throws -> IDLType {
        try expect("(")
        var fields: [IDLField] = []
        var cases: [String] = []
        while peek() != ")" {
            let name = try required(word())
            if peek() == ":" {
                try expect(":")
                fields.append(IDLField(name: name, type: try type()))
            } else {
                cases.append(name)
            }
            if peek() == "," { try expect(",") }
        }
        try expect(")")
        return cases.isEmpty ? .structure(fields) : .enumeration(cases)
    }

    mutating func type() throws -> IDLType {
        switch peek() {
        case "?":
            try expect("?")
            return .optional(try type())
        case "[":
            try expect("[")
            if peek() == "]" {
                try expect("]")
                return .array(try type())
            }
            try expect("string]")
            return .map(try type())
        case "(":
            return try parenthesized()
        default:
            let name = try required(word())
            switch name {
            case "bool": return .bool
            case "int": return .int
            case "float": return .float
            case "string": return .string
            case "object": return .object
            default: return .named(name)
            }
        }
    }
}
