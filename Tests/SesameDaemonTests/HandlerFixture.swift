import Foundation
import Logging
import SesameCore
import SesameCoreTesting
import SesameProtocol
import SesameVarlink
import SesameVarlinkTesting

@testable import SesameDaemon

/// The Accounts and Events handlers on an in-memory engine, a test clock and a scripted
/// provider, called in-process as any uid.
struct HandlerFixture {
    let clock = TestClock()
    let provider: ScriptedProvider
    let engine: DaemonEngine
    let accounts: AccountsInterface
    let events: EventsInterface
    let trust: Trust

    init(provider: ScriptedProvider = ScriptedProvider(), limits: UserLimits = UserLimits()) {
        self.provider = provider
        let logger = Logger(label: "test")
        let providers = Providers(adapters: [provider], logger: logger)
        engine = DaemonEngine(
            snapshot: SessionSnapshot(),
            clock: clock,
            persistence: MemorySessionPersistence(),
            refresher: providers,
            encode: EventReply.encode
        )
        trust = Trust(policy: AccessPolicy(), limits: limits)
        accounts = AccountsInterface(interfaceDescription: "", engine: engine, providers: providers, trust: trust)
        events = EventsInterface(interfaceDescription: "", engine: engine, trust: trust)
    }

    /// Calls an Accounts method as `uid`.
    func accounts(
        _ method: AccountsContract.Method,
        _ parameters: some Encodable = NoParameters(),
        as uid: UInt32 = 1000,
        more: Bool = false
    ) async throws -> InProcessCall.Outcome {
        try await InProcessCall(uid: uid).call(accounts, method.rawValue, parameters, more: more)
    }

    /// Imports an account of the scripted provider for `uid` and returns it.
    func imported(subject: String = "alice", as uid: UInt32 = 1000, expiresIn: Int64 = 3600) async throws -> Account {
        let parameters = ImportTokensParameters(
            provider: provider.name,
            subject: subject,
            displayName: nil,
            owner: nil,
            tokens: Tokens(accessToken: "AT-\(subject)", refreshToken: "RT-\(subject)", expiresIn: expiresIn)
        )
        return try await accounts(.importTokens, parameters, as: uid).reply(as: AccountReply.self).account
    }
}
