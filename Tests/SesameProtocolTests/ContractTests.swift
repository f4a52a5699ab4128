import Foundation
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Testing

extension SessionState: WireEnum {}
extension AuthEvent.Kind: WireEnum {}
extension AuthEvent.LogoutReason: WireEnum {}
extension LoginFlow: WireEnum {}
extension TokenVerdict: WireEnum {}

/// The Swift types of the Varlink contract against `interfaces/*.varlink`: every method of an
/// interface file has its Swift signature and back, with the same fields, optionality and types.
@Suite struct ContractTests {
    static func interface(_ name: String) throws -> IDLInterface {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(
            contentsOf: repository.appendingPathComponent("interfaces/\(name).varlink"),
            encoding: .utf8
        )
        return try IDLInterface(parsing: text)
    }

    @Test func theParserReadsWhatTheLanguageAllows() throws {
        let parsed = try IDLInterface(
            parsing: """
                # A comment.
                interface org.example.test
                type Kind (a, b)
                type Item (name: string, tags: []string, extra: ?[string]int, kind: ?Kind, inline: (x: float))
                method Get(id: string) -> (item: Item, items: []Item)
                error Missing (id: string)
                """
        )
        #expect(parsed.name == "org.example.test" && parsed.errors["Missing"] == [IDLField(name: "id", type: .string)])
        let item = try #require(parsed.types["Item"])
        #expect(
            parsed.resolved(.named("Item"))
                == .structure([
                    IDLField(name: "name", type: .string), IDLField(name: "tags", type: .array(.string)),
                    IDLField(name: "extra", type: .optional(.map(.int))),
                    IDLField(name: "kind", type: .optional(.enumeration(["a", "b"]))),
                    IDLField(name: "inline", type: .structure([IDLField(name: "x", type: .float)])),
                ])
        )
        #expect(item != .object && parsed.methods["Get"]?.reply.count == 2)
    }

    /// Every method of every contract, with its Swift parameter and reply types.
    static var signatures: [(interface: String, method: String, types: (any Codable.Type, any Codable.Type))] {
        let methods: [any VarlinkMethodDescription] =
            AccountsContract.methods + EventsContract.methods + AdminContract.methods + SharesContract.methods
        return methods.map { ($0.interface, $0.name, ($0.parametersType, $0.replyType)) }
    }

    @Test(arguments: signatures.indices)
    func aMethodMatchesTheInterfaceFile(_ index: Int) throws {
        let (interface, method, (parameters, reply)) = Self.signatures[index]
        let idl = try Self.interface(interface)
        let declared = try #require(idl.methods[method], "\(interface).\(method) is not in the interface file")
        let fileParameters = idl.resolved(.structure(declared.parameters))
        try expectSame(fileParameters, try WireShape.of(parameters), "\(method) parameters")
        try expectSame(idl.resolved(.structure(declared.reply)), try WireShape.of(reply), "\(method) reply")
    }

    @Test(arguments: [
        AccountsContract.interface, EventsContract.interface, AdminContract.interface, SharesContract.interface,
    ])
    func everyMethodOfAnInterfaceFileHasASwiftSignature(_ interface: String) throws {
        let idl = try Self.interface(interface)
        let swift = Set(Self.signatures.filter { $0.interface == interface }.map(\.method))
        #expect(Set(idl.methods.keys) == swift)
    }

    /// The two shapes, compared field by field (order aside) so a failure names the difference.
    private func expectSame(_ file: IDLType, _ swift: IDLType, _ what: String) throws {
        #expect(normalized(file) == normalized(swift), "\(what): the interface file says \(file), Swift says \(swift)")
    }

    private func normalized(_ type: IDLType) -> IDLType {
        switch type {
        case .structure(let fields):
            .structure(fields.map { IDLField(name: $0.name, type: normalized($0.type)) }.sorted { $0.name < $1.name })
        case .optional(let inner): .optional(normalized(inner))
        case .array(let inner): .array(normalized(inner))
        case .map(let inner): .map(normalized(inner))
        case .enumeration(let cases): .enumeration(cases.sorted())
        default: type
        }
    }
}

/// The errors of the interface files against `ContractError`.
@Suite struct ContractErrorTests {
    static let interfaces = [
        AccountsContract.interface, EventsContract.interface, AdminContract.interface, SharesContract.interface,
        ContractError.varlink,
    ]

    @Test func everyErrorOfTheInterfaceFilesIsAContractErrorWithTheSameParameters() throws {
        var declared: [String: IDLType] = [:]
        for name in Self.interfaces {
            let idl = try ContractTests.interface(name)
            for (error, fields) in idl.errors { declared["\(name).\(error)"] = idl.resolved(.structure(fields)) }
        }
        var swift: [String: IDLType] = [:]
        for example in ContractError.examples {
            let (name, parameters) = example.wire
            swift[name] = .structure(
                parameters.map { key, value in
                    switch value {
                    case .int: IDLField(name: key, type: .int)
                    // InvalidTransition's states are strings of SessionState's cases.
                    case .string:
                        IDLField(name: key, type: ["from", "to"].contains(key) ? .named("SessionState") : .string)
                    }
                }.sorted { $0.name < $1.name }
            )
        }
        #expect(Set(declared.keys) == Set(swift.keys))
        for (name, type) in declared {
            guard case .structure(let fields) = type, case .structure(let mine)? = swift[name] else { continue }
            let flattened = fields.map { field in
                IDLField(
                    name: field.name,
                    type: field.type == .enumeration(SessionState.allCases.map(\.rawValue))
                        ? .named("SessionState") : field.type
                )
            }.sorted { $0.name < $1.name }
            #expect(flattened == mine, "\(name): the interface file says \(type), Swift says \(mine)")
        }
    }

    @Test(arguments: ContractError.examples)
    func anErrorReadsBackAsItself(_ error: ContractError) {
        let (name, parameters) = error.wire
        #expect(ContractError(name: name, parameters: parameters) == error)
        #expect(
            ContractError(
                name: "org.example.Other." + (name.split(separator: ".").last.map(String.init) ?? ""),
                parameters: parameters
            ) == nil
        )
    }
}
