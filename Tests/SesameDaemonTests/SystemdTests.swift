import Foundation
import Logging
import SesameCore
import Testing

@testable import SesameDaemon

@Suite struct SystemdTests {
    @Test func journalFieldsAreUpperCaseAndPrefixed() {
        #expect(JournalLogHandler.fieldName(for: "account") == "SESAME_ACCOUNT")
        #expect(JournalLogHandler.fieldName(for: "peer-uid.x") == "SESAME_PEER_UID_X")
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

    @Test func everyPublishedInterfaceIsServed() {
        let served = Set(Daemon.interfaces(engine: testEngine()).map(\.name))
        #expect(served == Set(InterfaceDescriptions.byName.keys))
        for interface in Daemon.interfaces(engine: testEngine()) {
            #expect(interface.interfaceDescription.contains("interface \(interface.name)\n"))
        }
    }
}

private func testEngine() -> DaemonEngine {
    DaemonEngine(
        snapshot: SessionSnapshot(),
        clock: SystemSessionClock(),
        persistence: MemorySessionPersistence(),
        encode: EventReply.encode
    )
}
