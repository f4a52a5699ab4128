import Foundation
import Logging
import SesameCore
import SesameCoreTesting
import SesameProtocol
import SesameVarlink
import SesameVarlinkTesting
import Synchronization
import Testing

@testable import SesameDaemon

/// What the journal receives: field names (`SESAME_ACCOUNT=`, `PEER_UID=`, …), priorities, and
/// the fields of every event, with the caller that caused it.
@Suite struct JournalFieldsTests {
    @Test func thePeerHasFieldsOfItsOwnAndEverythingElseIsPrefixed() {
        #expect(JournalLogHandler.fieldName(for: "peer_uid") == "PEER_UID")
        #expect(JournalLogHandler.fieldName(for: "peer_pid") == "PEER_PID")
        #expect(JournalLogHandler.fieldName(for: "account") == "SESAME_ACCOUNT")
        #expect(JournalLogHandler.fieldName(for: "provider") == "SESAME_PROVIDER")
        #expect(JournalLogHandler.fieldName(for: "event") == "SESAME_EVENT")
        #expect(JournalLogHandler.fieldName(for: "Peer_UID") == "SESAME_PEER_UID")
    }

    @Test(arguments: [
        "account", "peer_uid", "", "_leading", "a-b.c d", "ünïcode", "ß", "x\ny=z", String(repeating: "k", count: 200),
    ])
    func everyFieldNameIsOneJournaldAccepts(key: String) {
        let name = JournalLogHandler.fieldName(for: key)
        #expect(!name.isEmpty && name.count <= 64, "\(name)")
        #expect(!name.hasPrefix("_"), "\(name)")
        #expect(name.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber || $0 == "_") }, "\(name)")
    }

    @Test func prioritiesAreSyslogSeverities() {
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected {
            #expect(JournalLogHandler.priority(of: level) == priority, "\(level)")
        }
    }

    @Test func anEntryCarriesItsMessagePriorityAndMetadataTheCallWinning() {
        var handler = JournalLogHandler(identifier: "sesamed")
        handler[metadataKey: "peer_uid"] = "1000"
        handler[metadataKey: "method"] = "io.sesame.Accounts.Logout"
        let event = LogEvent(
            level: .warning,
            message: "two\nlines",
            metadata: ["account": "google:alice", "method": "overridden"],
            source: nil,
            file: "F.swift",
            function: "f()",
            line: 7
        )
        let fields = handler.fields(for: event)
        #expect(fields.first == "MESSAGE=two\nlines")
        #expect(fields.contains("PRIORITY=4"))
        #expect(fields.contains("SYSLOG_IDENTIFIER=sesamed"))
        #expect(fields.contains("PEER_UID=1000"))
        #expect(fields.contains("SESAME_ACCOUNT=google:alice"))
        #expect(fields.contains("SESAME_METHOD=overridden"))
        #expect(!fields.contains { $0.hasPrefix("SESAME_PEER_") })
    }

    @Test func eventLevelsFollowWhatTheEventMeansForThePerson() {
        #expect(EventLog.level(of: .needsLogin) == .warning)
        #expect(EventLog.level(of: .refreshFailed) == .warning)
        #expect(EventLog.level(of: .expired) == .notice)
        for kind in [AuthEvent.Kind.loggedIn, .tokenRefreshed, .expiring, .loggedOut, .accountRemoved] {
            #expect(EventLog.level(of: kind) == .info, "\(kind)")
        }
    }

    @Test func anEventCausedByACallIsLoggedWithItsKindAccountProviderAndCaller() async throws {
        let journal = CapturedJournal()
        let engine = DaemonEngine(
            snapshot: SessionSnapshot(),
            clock: TestClock(),
            runningOn: testEngineLoop,
            persistence: SwitchableStore(),
            observer: EventLog.observer(logger: journal.logger, changes: AsyncStream<Void>.makeStream().continuation),
            encode: EventReply.encode
        )
        let provider = ScriptedProvider()
        let logger = Logger(label: "test")
        let accounts = AccountsInterface(
            interfaceDescription: "",
            engine: engine,
            providers: Providers(adapters: [provider], logger: logger),
            trust: Trust(policy: AccessPolicy(), limits: UserLimits())
        )
        let parameters = ImportTokensParameters(
            provider: provider.name,
            subject: "alice",
            displayName: nil,
            owner: nil,
            tokens: Tokens(accessToken: "AT-unit", refreshToken: "RT-unit", expiresIn: 3600)
        )
        let account = try await InProcessCall(uid: 4242)
            .call(CallerAttributedInterface(wrapped: accounts), "ImportTokens", parameters)
            .reply(as: AccountReply.self).account

        let entry = try #require(journal.entries.first { $0.contains("SESAME_EVENT=loggedIn") })
        #expect(entry.contains("SESAME_ACCOUNT=\(account.id)"))
        #expect(entry.contains("SESAME_PROVIDER=\(provider.name)"))
        #expect(entry.contains("PEER_UID=4242"))
        #expect(entry.contains("PRIORITY=6"))
        #expect(!journal.entries.joined().contains("AT-unit") && !journal.entries.joined().contains("RT-unit"))
    }

    @Test func anEventTheDaemonCausesByItselfNamesNoPeer() {
        let event = AuthEvent(
            sequence: 3,
            time: Date(timeIntervalSince1970: 0),
            kind: .loggedOut,
            account: Account(
                id: "p:bob",
                provider: "p",
                ownerUID: 1000,
                subject: "bob",
                state: .loggedOut,
                createdAt: Date(timeIntervalSince1970: 0)
            ),
            reason: .user
        )
        let quiet = EventLog.metadata(of: event, cause: nil)
        #expect(quiet["peer_uid"] == nil && quiet["peer_pid"] == nil)
        #expect(quiet["event"] == "loggedOut" && quiet["provider"] == "p" && quiet["reason"] == "user")
        let caused = EventLog.metadata(of: event, cause: PeerCredentials(pid: 77, uid: 1000, gid: 1000))
        #expect(caused["peer_uid"] == "1000" && caused["peer_pid"] == "77")
    }
}

/// A logger whose entries are kept as the journal fields `JournalLogHandler` would send.
final class CapturedJournal: Sendable {
    private let captured = Mutex<[[String]]>([])

    /// Every entry so far, each its fields joined by newlines.
    var entries: [String] { captured.withLock { $0.map { $0.joined(separator: "\n") } } }

    /// A logger that writes here.
    var logger: Logger {
        Logger(label: "journal") { _ in Handler(journal: self, formatter: JournalLogHandler(identifier: "sesamed")) }
    }

    private struct Handler: LogHandler {
        let journal: CapturedJournal
        var formatter: JournalLogHandler
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata {
            get { formatter.metadata }
            set { formatter.metadata = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { formatter[metadataKey: key] }
            set { formatter[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = formatter.fields(for: event)
            journal.captured.withLock { $0.append(fields) }
        }
    }
}
