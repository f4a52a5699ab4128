import Foundation
import Logging
import SesameCore
import SesameCoreTesting
import SesameProtocol
import SesameStore
import SesameVarlink
import SesameVarlinkTesting
import Testing

@testable import SesameDaemon

/// The whole of sesamed put together in the test's process as `Daemon.serve` puts it together
/// (`Daemon.assemble`): its encrypted store in a temporary directory, the test clock, a scripted
/// provider, and its interfaces called in-process as any uid. It holds the state directory's
/// lock as sesamed does; a harness opened on the same directory once the first is gone is a
/// restart.
final class DaemonHarness {
    let clock: TestClock
    let provider: ScriptedProvider
    let directory: String
    let parts: Daemon.Parts
    private let lock: StateDirectoryLock

    /// A daemon on a new store in a new temporary directory, or on the store `directory` holds.
    init(
        directory: String? = nil,
        clock: TestClock = TestClock(),
        provider: ScriptedProvider = ScriptedProvider()
    ) throws {
        self.clock = clock
        self.provider = provider
        let directory =
            directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("daemon-\(UUID())").path
        self.directory = directory
        let logger = Logger(label: "daemon-harness")
        let configuration = DaemonConfiguration(socketPath: directory + "/socket", stateDirectory: directory)
        let daemon = Daemon(configuration: configuration, reread: { configuration }, logger: logger)
        let (store, snapshot, lock) = try daemon.openStore()
        self.lock = lock
        parts = daemon.assemble(
            store: store,
            snapshot: snapshot,
            providers: Providers(adapters: [provider], logger: logger),
            clock: clock,
            statusStale: AsyncStream<Void>.makeStream().continuation
        )
    }

    /// Calls `method` of the interface named `interface` as `uid`.
    func call(
        _ interface: String,
        _ method: String,
        _ parameters: some Encodable = [String: String](),
        as uid: UInt32 = 1000
    ) async throws -> InProcessCall.Outcome {
        let served = try #require(parts.interfaces.first { $0.name == interface }, "sesamed serves \(interface)")
        return try await InProcessCall(uid: uid).call(served, method, parameters)
    }

    /// Imports tokens about `subject` as `uid`, as an app hands them over, and returns the account.
    func imported(subject: String = "alice", expiresIn: Int64 = 3600, as uid: UInt32 = 1000) async throws -> Account {
        let parameters = provider.importParameters(
            subject: subject,
            access: "AT-1",
            refresh: "RT-1",
            expiresIn: expiresIn
        )
        return try await call(AccountsContract.interface, "ImportTokens", parameters, as: uid)
            .reply(as: LoggedInReply.self).account
    }

    /// Subscribes to every event `uid` may see; cancel the task to end the subscription.
    func subscribe(as uid: UInt32 = 1000) throws -> (AsyncStream<SubscribeReply>, Task<Void, any Error>) {
        let events = try #require(parts.interfaces.first { $0.name == EventsContract.interface })
        let (replies, continuation) = AsyncStream<SubscribeReply>.makeStream()
        let context = VarlinkCallContext(
            peer: PeerCredentials(pid: 1, uid: uid, gid: uid),
            logger: Logger(label: "daemon-harness"),
            streaming: true
        ) { reply in continuation.yield(try reply.decode(SubscribeReply.self)) }
        let call = VarlinkCall(method: EventsContract.subscribe.qualifiedName, parameters: [:], more: true)
        // However the call ends, the stream ends too, so a test reading it never waits on a
        // subscription that is over.
        let task = Task {
            defer { continuation.finish() }
            _ = try await events.methods.answer(call, context: context)
        }
        return (replies, task)
    }

    /// Deletes the store's directory.
    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
