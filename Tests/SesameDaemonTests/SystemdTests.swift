import Foundation
import Logging
import SesameCore
import SesameStore
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

    @Test func everyPublishedInterfaceIsServed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iface-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, _) = try EncryptedStore.open(
            directory: directory,
            keySources: KeySources(credentialsDirectory: nil, keyFile: nil, generatedKeyFile: directory + "/dev.key"),
            onDamage: .refuse,
            logger: Logger(label: "test")
        )
        let interfaces = Daemon.interfaces(
            engine: testEngine(),
            store: store,
            providers: Providers([], logger: Logger(label: "test")),
            trust: Trust(policy: AccessPolicy(), limits: UserLimits())
        )
        #expect(Set(interfaces.map(\.name)) == Set(InterfaceDescriptions.byName.keys))
        for interface in interfaces {
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
