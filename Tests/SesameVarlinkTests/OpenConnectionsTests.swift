import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import SesameVarlink

@Suite struct OpenConnectionsTests {
    /// Each connection that closes is told how the server was stopping then, so that those a
    /// hard stop cut off report it, and none that ended before.
    @Test func aConnectionLearnsAsItClosesWhetherAHardStopCutItOff() throws {
        let connections = OpenConnections()
        let busy = try #require(connections.register(EmbeddedChannel()))
        let finished = try #require(connections.register(EmbeddedChannel()))
        #expect(connections.remove(finished) == nil)
        connections.closeAll()
        #expect(connections.remove(busy) == .hard)
        #expect(connections.remove(busy) == nil, "a connection is forgotten once")
    }

    /// A graceful stop after a hard one changes nothing: connections that close are still
    /// cut off, and none is told to stop again.
    @Test func aHardStopIsNeverWeakened() throws {
        let connections = OpenConnections()
        let busy = try #require(connections.register(EmbeddedChannel()))
        #expect(connections.drain() == 1)
        connections.closeAll()
        #expect(connections.drain() == 0)
        #expect(connections.remove(busy) == .hard)
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
        #expect(connections.remove(open) == .graceful)
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
