import Foundation
import Logging
import SesameProtocol
import SesameStore
import SesameVarlink
import SesameVarlinkTesting
import SesameWire
import Testing

@testable import SesameDaemon

/// Each interface's dispatch table against its contract: a method the contract names and the
/// table lacks would answer `MethodNotFound` to every caller, which no compiler catches.
@Suite struct MethodTableTests {
    /// The interfaces under test, each with the contract's list of its methods.
    private static func interfaces(admin: AdminInterface) -> [(any VarlinkInterface, [any VarlinkMethodDescription])] {
        let fixture = HandlerFixture()
        let shares = SharesInterface(
            interfaceDescription: "",
            engine: fixture.engine,
            trust: fixture.trust,
            shares: Shares()
        )
        return [
            (fixture.accounts, AccountsContract.methods), (fixture.events, EventsContract.methods),
            (shares, SharesContract.methods), (admin, AdminContract.methods),
            (CallerAttributedInterface(wrapped: fixture.accounts), AccountsContract.methods),
        ]
    }

    /// An Admin interface over a store in a temporary directory, for `body`.
    private static func withAdmin(_ body: (AdminInterface) async throws -> Void) async throws {
        let temporary = try TemporaryStore()
        defer { temporary.remove() }
        try await body(
            AdminInterface(interfaceDescription: "", engine: HandlerFixture().engine, store: temporary.store)
        )
    }

    @Test func everyMethodOfTheContractIsInItsInterfacesTable() async throws {
        try await Self.withAdmin { admin in
            for (interface, methods) in Self.interfaces(admin: admin) {
                for method in methods {
                    // No parameters: a method that takes some refuses the call before doing anything.
                    let outcome = try await InProcessCall(uid: 1000).call(interface, method.name)
                    #expect(
                        outcome.errorName != VarlinkError.methodNotFound(method.qualifiedName).name,
                        "\(method.qualifiedName)"
                    )
                }
            }
        }
    }

    @Test func everyAdminMethodIsRootsOnly() async throws {
        try await Self.withAdmin { admin in
            for method in AdminContract.methods {
                let outcome = try await InProcessCall(uid: 1000).call(admin, method.name)
                #expect(outcome.errorName == VarlinkError.permissionDenied.name, "\(method.qualifiedName)")
            }
            let stats = try await InProcessCall(uid: 0).call(admin, AdminContract.stats.name)
            #expect(try stats.reply(as: StatsReply.self).accounts == 0)
        }
    }
}
