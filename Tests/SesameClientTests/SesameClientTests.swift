import Foundation
import Logging
import SesameClient
import SesameCore
import SesameProtocol
import SesameVarlink
import Testing

/// An io.sesame.Accounts that knows one account and names errors as the contract does.
private struct FakeAccounts: VarlinkInterface {
    let name = AccountsContract.interface
    let interfaceDescription = ""
    static let account = Account(
        id: "google-1",
        provider: "google",
        ownerUID: 1000,
        subject: "alice",
        state: .active,
        createdAt: Date(timeIntervalSince1970: 1_800_000_000)
    )

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        switch AccountsContract.Method(rawValue: call.methodName) {
        case .list: return try VarlinkReply(ListReply(accounts: [Self.account]))
        case .get:
            let id = try call.decodeParameters(AccountParameters.self).account
            guard id == Self.account.id else { throw Self.error(.noSuchAccount(account: id)) }
            return try VarlinkReply(AccountReply(account: Self.account))
        case .login: throw Self.error(.noSuchProvider(provider: "nosuch"))
        default: throw VarlinkError.methodNotFound(call.method)
        }
    }

    static func error(_ contract: ContractError) -> VarlinkError {
        let (name, parameters) = contract.wire
        return VarlinkError(
            name,
            parameters: parameters.mapValues {
                switch $0 {
                case .string(let text): .string(text)
                case .int(let number): .int(number)
                }
            }
        )
    }
}

/// SesameClient against an in-process Varlink server on a private socket.
@Suite struct SesameClientTests {
    private func withClient(_ body: (SesameClient) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("io.sesame").path
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await VarlinkServer.bind(
            .path(path, mode: 0o600),
            configuration: .init(
                info: .init(vendor: "Test", product: "fake", version: "1", url: ""),
                protocolInterface: ContractError.varlink
            ),
            interfaces: [FakeAccounts()],
            logger: Logger(label: "test")
        )
        let running = Task { try await server.run() }
        defer { running.cancel() }
        let client = try await SesameClient.connect(socketPath: path)
        try await body(client)
        await client.close()
    }

    @Test func accountsDecodeFromTheContractsTypes() async throws {
        try await withClient { client in
            let accounts = try await client.accounts()
            #expect(accounts == [FakeAccounts.account])
            let account = try await client.account("google-1")
            #expect(account.subject == "alice")
        }
    }

    @Test func namedErrorsArriveAsSesameErrors() async throws {
        try await withClient { client in
            await #expect(throws: SesameError.session(.noSuchAccount("nosuch"))) { try await client.account("nosuch") }
            await #expect(throws: SesameError.refused(.noSuchProvider(provider: "nosuch"))) {
                _ = try await client.startBrowserLogin(provider: "nosuch", redirectURI: "http://127.0.0.1:1/cb")
            }
        }
    }

    @Test func nothingListeningIsCannotConnect() async throws {
        await #expect {
            _ = try await SesameClient.connect(socketPath: "/nonexistent/sesame/io.sesame")
        } throws: { error in
            if case .cannotConnect(let path, _)? = error as? SesameError {
                path == "/nonexistent/sesame/io.sesame"
            } else {
                false
            }
        }
    }
}
