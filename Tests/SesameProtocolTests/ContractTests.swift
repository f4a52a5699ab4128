import Foundation
import SesameCore
import SesameProtocol
import Testing

extension SessionState: WireEnum {}
extension AuthEvent.Kind: WireEnum {}
extension AuthEvent.LogoutReason: WireEnum {}
extension LoginFlow: WireEnum {}

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

    @Test(arguments: AccountsContract.Method.allCases)
    func accountsMethodMatchesTheInterfaceFile(_ method: AccountsContract.Method) throws {
        let idl = try Self.interface(AccountsContract.interface)
        let declared = try #require(idl.methods[method.rawValue], "\(method.rawValue) is not in the interface file")
        let (parameters, reply) = method.signature
        try expectSame(
            idl.resolved(.structure(declared.parameters)),
            try WireShape.of(parameters),
            "\(method) parameters"
        )
        try expectSame(idl.resolved(.structure(declared.reply)), try WireShape.of(reply), "\(method) reply")
    }

    @Test func everyMethodOfTheAccountsFileHasASwiftSignature() throws {
        let idl = try Self.interface(AccountsContract.interface)
        let swift = Set(AccountsContract.Method.allCases.map(\.rawValue))
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
