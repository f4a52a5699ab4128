import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import SesameVarlink

@Suite struct OpenConnectionsTests {
    /// A connection that closes once a hard stop has begun records that it was cut off, before
    /// the one waiting for the last connection is told, so the record is whole when it is read;
    /// one that closed before, or closes twice, records nothing.
    @Test func aConnectionCutOffByAHardStopIsRecordedBeforeTheWaitIsOver() async throws {
        let connections = OpenConnections()
        let busy = try #require(connections.register(EmbeddedChannel()))
        let finished = try #require(connections.register(EmbeddedChannel()))
        let record = Mutex<[String]>([])
        connections.remove(finished) { record.withLock { $0.append("finished") } }
        connections.closeAll()
        let waiting = Task { await connections.allEnded() }
        connections.remove(busy) { record.withLock { $0.append("busy") } }
        connections.remove(busy) { record.withLock { $0.append("busy again") } }
        await waiting.value
        #expect(record.withLock { $0 } == ["busy"])
    }

    /// A graceful stop after a hard one changes nothing: connections that close are still
    /// cut off, and none is told to stop again.
    @Test func aHardStopIsNeverWeakened() throws {
        let connections = OpenConnections()
        let busy = try #require(connections.register(EmbeddedChannel()))
        #expect(connections.drain() == 1)
        connections.closeAll()
        #expect(connections.drain() == 0)
        let cutOff = Mutex(false)
        connections.remove(busy) { cutOff.withLock { $0 = true } }
        #expect(cutOff.withLock { $0 })
    }

    /// A stopped server's `run()` returns only once every connection has closed and every task
    /// answering a call off the loop has ended, not when the last connection closes.
    @Test func allEndedWaitsForConnectionsAndTasks() async throws {
        let connections = OpenConnections()
        let tasks = OffLoopTasks()
        let open = try #require(connections.register(EmbeddedChannel()))
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let task = tasks.start {
            for await _ in gate { break }
        }
        #expect(connections.drain() == 1)
        let finished = Mutex(false)
        let ended = Task {
            await connections.allEnded()
            await tasks.allEnded()
            finished.withLock { $0 = true }
        }
        connections.remove(open) { Issue.record("a graceful stop cuts nothing off") }
        for _ in 0..<100 { await Task.yield() }
        let endedEarly = finished.withLock { $0 }
        #expect(!endedEarly, "a task still runs")
        opening.yield()
        await task.value
        await ended.value
        // Once stopped and empty, it returns at once.
        await connections.allEnded()
        await tasks.allEnded()
    }

    /// The report keeps what each connection said of the stops, and is taken once.
    @Test func theStopReportTalliesWhatTheConnectionsSaid() {
        let report = StopReport()
        report.drained(.closeNow(cancelling: nil))
        report.drained(.letFinish)
        report.drained(.nothing)
        report.cutOff(answering: "org.example.Slow")
        report.cutOff(answering: nil)
        #expect(report.drainedSoFar == StopReport.Drained(idle: 1, streaming: 0, answering: 1))
        #expect(report.takeCutOff().sorted { ($0 ?? "") < ($1 ?? "") } == [nil, "org.example.Slow"])
        #expect(report.takeCutOff().isEmpty, "the record is taken once")
    }
}
