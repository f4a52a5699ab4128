import SesameProtocol
import SesameVarlink
import SesameVarlinkTesting
import Testing

@testable import SesameDaemon

/// Each interface's dispatch table against its contract: a method the contract names and the
/// table lacks would answer `MethodNotFound` to every caller, which no compiler catches.
@Suite struct MethodTableTests {
    /// The interfaces under test, each with the contract's list of its methods.
    private static func interfaces() -> [(interface: any VarlinkInterface, methods: [any VarlinkMethodDescription])] {
        let fixture = HandlerFixture()
        let shares = SharesInterface(
            interfaceDescription: "",
            engine: fixture.engine,
            trust: fixture.trust,
            shares: Shares()
        )
        return [
            (fixture.accounts, AccountsContract.methods), (fixture.events, EventsContract.methods),
            (shares, SharesContract.methods),
            (CallerAttributedInterface(wrapped: fixture.accounts), AccountsContract.methods),
        ]
    }

    @Test func everyMethodOfTheContractIsInItsInterfacesTable() async throws {
        for (interface, methods) in Self.interfaces() {
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
