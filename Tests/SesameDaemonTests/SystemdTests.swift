import Foundation
import Logging
import SesameCore
import SesameCoreTesting
import SesameStore
import Synchronization
import Testing

@testable import SesameDaemon

@Suite struct SystemdTests {
    @Test func journalFieldsAreUpperCaseAndPrefixed() {
        #expect(JournalLogHandler.fieldName(for: "account") == "SESAME_ACCOUNT")
        #expect(JournalLogHandler.fieldName(for: "peer-uid.x") == "SESAME_PEER_UID_X")
    }

    /// sd_notify(3): each assignment is one line, so a status that carries line breaks of any
    /// kind (a provider's error text may end in CRLF) stays one assignment.
    @Test func aStatusWithLineBreaksOfAnyKindIsOneAssignment() {
        #expect(SystemdNotifier.State.status("a\r\nb\nc\rd").assignments == ["STATUS=a b c d"])
    }

    @Test func journalIsOnlyUsedWhenStderrIsTheJournalStream() {
        #expect(!JournalLogHandler.isJournalConnected(environment: [:]))
        #expect(!JournalLogHandler.isJournalConnected(environment: ["JOURNAL_STREAM": "garbage"]))
        var status = stat()
        fstat(STDERR_FILENO, &status)
        let matching = "\(status.st_dev):\(status.st_ino)"
        #expect(JournalLogHandler.isJournalConnected(environment: ["JOURNAL_STREAM": matching]))
        #expect(
            !JournalLogHandler.isJournalConnected(environment: [
                "JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"
            ])
        )
    }

    @Test func everyPublishedInterfaceIsServed() throws {
        let temporary = try TemporaryStore()
        defer { temporary.remove() }
        let interfaces = Daemon.interfaces(
            engine: testEngine(),
            store: temporary.store,
            providers: Providers(ProviderFiles.Loaded(), logger: Logger(label: "test")),
            trust: Trust(policy: AccessPolicy(), limits: UserLimits())
        )
        #expect(Set(interfaces.map(\.name)) == Set(InterfaceDescriptions.byName.keys))
        for interface in interfaces {
            #expect(interface.interfaceDescription.contains("interface \(interface.name)\n"))
        }
    }

    @Test func aManagerThatDoesNotReadNeverBlocksTheNotifyingThread() async {
        let manager = StuckManager()
        let notifier = SystemdNotifier(send: manager.receive)
        manager.notifying { notifier.notify(.ready, .status("1 account")) }
        manager.notifying { notifier.notify(.stopping) }
        manager.notifying {
            for second in 0..<50 { notifier.notify(.status("\(second)")) }
        }
        #expect(manager.handedOverOnTheNotifyingThread == 0, "sd_notify may block: never on the caller's thread")
        manager.release()
        await notifier.flush(waitingAtMost: .seconds(600))
        let received = manager.received
        #expect(Array(received.prefix(2)) == ["READY=1\nSTATUS=1 account", "STOPPING=1"], "in order")
        #expect(
            received.count == 2 + SystemdNotifier.routineBacklogLimit,
            "status lines beyond the backlog are dropped; state changes never are"
        )
    }
}

/// A service manager that takes no message until released, and counts the messages handed to it
/// on the thread that is notifying (which a blocked send would block).
private final class StuckManager: Sendable {
    private struct State {
        var received: [String] = []
        var handedOverOnTheNotifyingThread = 0
        var notifyingThread: pthread_t?
    }

    private let state = Mutex(State())
    private let released = DispatchSemaphore(value: 0)

    var received: [String] { state.withLock { $0.received } }
    var handedOverOnTheNotifyingThread: Int { state.withLock { $0.handedOverOnTheNotifyingThread } }

    /// Runs `body`, which notifies, remembering which thread it runs on.
    func notifying(_ body: () -> Void) {
        state.withLock { $0.notifyingThread = pthread_self() }
        body()
        state.withLock { $0.notifyingThread = nil }
    }

    func receive(_ message: String) {
        let onNotifyingThread = state.withLock { state in
            guard let thread = state.notifyingThread, pthread_equal(thread, pthread_self()) != 0 else { return false }
            state.handedOverOnTheNotifyingThread += 1
            state.received.append(message)
            return true
        }
        guard !onNotifyingThread else { return }
        released.wait()
        released.signal()
        state.withLock { $0.received.append(message) }
    }

    func release() {
        released.signal()
    }
}

private func testEngine() -> DaemonEngine {
    DaemonEngine(
        snapshot: SessionSnapshot(),
        clock: SystemSessionClock(),
        runningOn: testEngineLoop,
        persistence: MemorySessionPersistence(),
        encode: EventReply.encode
    )
}
