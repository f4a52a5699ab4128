import Foundation
import Logging
import SesameClient
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire
import Synchronization
import Testing

/// An io.sesame.Accounts that knows one account and names errors as the contract does.
struct FakeAccounts: VarlinkInterface {
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

    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.on(AccountsContract.list) { _, _ in ListReply(accounts: [Self.account]) }
        methods.on(AccountsContract.get) { request, _ in
            guard request.account == Self.account.id else { throw Self.error(.noSuchAccount(account: request.account)) }
            return AccountReply(account: Self.account)
        }
        methods.on(AccountsContract.login) { _, _ -> LoginReply in throw Self.error(.noSuchProvider(provider: "nosuch"))
        }
        methods.on(AccountsContract.getToken) { [desk] _, _ in try desk.token() }
        methods.on(AccountsContract.reportRejected) { [desk] request, _ in
            ReportRejectedReply(refreshed: desk.reject(request.accessToken))
        }
        return methods
    }

    /// The account's tokens: each rejection of the current one refreshes it to the next, until
    /// `refreshes` run out; then the session needs a login.
    let desk = TokenDesk()

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

/// The fake account's token as sesamed would hand it out and refresh it when it is reported.
final class TokenDesk: Sendable {
    private let state = Mutex((generation: 1, refreshesLeft: 1, reports: 0))

    /// How many times a token was reported rejected.
    var reports: Int { state.withLock { $0.reports } }

    /// Lets `count` more refreshes succeed; after those the session needs a login.
    func allowRefreshes(_ count: Int) {
        state.withLock { $0.refreshesLeft = count }
    }

    func token() throws -> GetTokenReply {
        let generation = state.withLock { $0.generation }
        guard generation > 0 else { throw FakeAccounts.error(.needsLogin(account: FakeAccounts.account.id)) }
        return GetTokenReply(accessToken: "AT-\(generation)", tokenType: "Bearer", expiresAt: nil)
    }

    /// A rejection of `token`: refreshes when it is the current one and a refresh is left.
    func reject(_ token: String) -> Bool {
        state.withLock { state in
            state.reports += 1
            guard token == "AT-\(state.generation)" else { return false }
            guard state.refreshesLeft > 0 else {
                state.generation = 0
                return false
            }
            state.refreshesLeft -= 1
            state.generation += 1
            return true
        }
    }
}

/// SesameClient against an in-process Varlink server on a private socket.
@Suite struct SesameClientTests {
    private func withClient(
        _ accounts: FakeAccounts = FakeAccounts(),
        _ body: (SesameClient) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("io.sesame").path
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await VarlinkServer.bind(
            .path(path, mode: 0o600),
            configuration: .init(
                info: .init(vendor: "Test", product: "fake", version: "1", url: ""),
                protocolInterface: ContractError.varlink
            ),
            interfaces: [accounts],
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

    /// The seeds' request wrapper: a rejected token is reported once and the body retried once
    /// with the refreshed token.
    @Test func authorizedRetriesOnceWithTheRefreshedToken() async throws {
        let accounts = FakeAccounts()
        try await withClient(accounts) { client in
            let seen = Mutex<[String]>([])
            let answer = try await client.authorized(account: "google-1") { token in
                seen.withLock { $0.append(token.accessToken) }
                try TokenRejectedError.check(status: token.accessToken == "AT-1" ? 401 : 200)
                return "called with \(token.accessToken)"
            }
            #expect(answer == "called with AT-2")
            #expect(seen.withLock { $0 } == ["AT-1", "AT-2"])
            #expect(accounts.desk.reports == 1)
        }
    }

    @Test func authorizedGivesUpAfterOneRetry() async throws {
        let accounts = FakeAccounts()
        accounts.desk.allowRefreshes(5)
        try await withClient(accounts) { client in
            let calls = Mutex(0)
            await #expect(throws: TokenRejectedError()) {
                try await client.authorized(account: "google-1") { _ in
                    calls.withLock { $0 += 1 }
                    throw TokenRejectedError()
                }
            }
            #expect(calls.withLock { $0 } == 2, "one call and exactly one retry")
            #expect(accounts.desk.reports == 1)
        }
    }

    @Test func authorizedSurfacesANeededLoginDistinctly() async throws {
        let accounts = FakeAccounts()
        accounts.desk.allowRefreshes(0)
        try await withClient(accounts) { client in
            await #expect {
                try await client.authorized(account: "google-1") { _ in throw TokenRejectedError() }
            } throws: { error in
                (error as? SesameError)?.needsLogin == true
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
