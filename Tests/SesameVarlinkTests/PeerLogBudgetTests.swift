import Foundation
import Logging
import Testing

@testable import SesameVarlink

/// A uid sending bad messages in a loop gets a few log lines a minute, and the next line says
/// how many were held back; other uids keep their own budget.
struct PeerLogBudgetTests {
    @Test func linesBeyondTheBudgetAreHeldBackAndCountedInTheNextOne() {
        let budget = PeerLogBudget(perWindow: 3, window: .seconds(60))
        let start = ContinuousClock.now
        #expect((0..<5).map { _ in budget.admit(1000, at: start) } == [0, 0, 0, nil, nil])
        #expect(budget.admit(1001, at: start) == 0)
        #expect(budget.admit(1000, at: start + .seconds(59)) == nil)
        #expect(budget.admit(1000, at: start + .seconds(60)) == 3)
        #expect(budget.admit(1000, at: start + .seconds(61)) == 0)
    }

    @Test func manyUidsTogetherStopAtTheBudgetOfAllAndEachIsToldWhatItLost() {
        let budget = PeerLogBudget(perWindow: 2, allPerWindow: 5, window: .seconds(60))
        let start = ContinuousClock.now
        // One person with a subordinate uid range: each uid within its own budget.
        let admitted = (100_000..<100_010).map { uid in budget.admit(UInt32(uid), at: start) }
        #expect(admitted == [0, 0, 0, 0, 0, nil, nil, nil, nil, nil])
        #expect(budget.admit(1000, at: start + .seconds(30)) == nil)
        #expect(budget.admit(1000, at: start + .seconds(60)) == 1)
        #expect(budget.admit(100_009, at: start + .seconds(60)) == 1)
    }

    @Test func theFirstLineAfterAHeldBackOneCarriesTheCountAndErrorsAreNeverHeldBack() {
        let budget = PeerLogBudget(perWindow: 1, window: .seconds(60))
        let start = ContinuousClock.now
        let line: Logger.Metadata = ["account": "work"]
        #expect(budget.admit(.info, from: 1000, metadata: line, at: start) == line)
        #expect(budget.admit(.notice, from: 1000, metadata: line, at: start) == nil)
        #expect(budget.admit(.debug, from: 1000, metadata: line, at: start) == nil)
        #expect(budget.admit(.error, from: 1000, metadata: line, at: start) == line)
        #expect(
            budget.admit(.info, from: 1000, metadata: line, at: start + .seconds(60))
                == ["account": "work", "held_back": "2"]
        )
    }
}

/// Keeps the messages of the lines that reach it.
private final class CapturedLines: @unchecked Sendable {
    // Only appended to and read under the lock.
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

private struct CapturingLogHandler: LogHandler {
    let captured: CapturedLines
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { captured.append("\(event.level) \(event.message)") }
}

/// What a user's calls make sesamed log is spent from that uid's budget, whatever the line.
struct BudgetedLogHandlerTests {
    @Test func aUidsLinesUpToWarningsAreSpentFromItsBudgetAndErrorsAlwaysPass() {
        let captured = CapturedLines()
        let budget = PeerLogBudget(perWindow: 3, window: .seconds(60))
        func logger(for uid: UInt32) -> Logger {
            Logger(label: "test") { _ in
                BudgetedLogHandler(wrapping: CapturingLogHandler(captured: captured), uid: uid, budget: budget)
            }
        }
        let flooder = logger(for: 1000)
        for _ in 0..<10 { flooder.info("login started") }
        flooder.warning("could not revoke")
        flooder.error("call failed unexpectedly")
        logger(for: 1001).notice("account removed")
        #expect(
            captured.all == [
                "info login started", "info login started", "info login started",
                "error call failed unexpectedly", "notice account removed",
            ]
        )
    }
}
