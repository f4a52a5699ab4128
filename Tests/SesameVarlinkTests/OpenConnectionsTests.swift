import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import SesameVarlink

@Suite struct OpenConnectionsTests {
    /// A hard stop reports every connection that closes after it began, with what its handler
    /// says it was answering, and none that ended before.
    @Test func aHardStopReportsWhatItCutOff() throws {
        let connections = OpenConnections()
        let busy = try #require(connections.register(EmbeddedChannel()))
        let idle = try #require(connections.register(EmbeddedChannel()))
        let finished = try #require(connections.register(EmbeddedChannel()))
        connections.remove(finished, answering: "org.example.Done")

        connections.closeAll()
        connections.remove(busy, answering: "org.example.Slow")
        connections.remove(idle, answering: nil)

        #expect(connections.takeCutOff().sorted { ($0 ?? "") < ($1 ?? "") } == [nil, "org.example.Slow"])
        #expect(connections.takeCutOff().isEmpty, "the record is taken once")
    }

    /// A graceful stop after a hard one changes nothing: connections that close are still
    /// reported cut off, and none is told to stop again.
    @Test func aHardStopIsNeverWeakened() throws {
        let connections = OpenConnections()
        let busy = try #require(connections.register(EmbeddedChannel()))
        #expect(connections.drain() == 1)
        connections.closeAll()
        #expect(connections.drain() == 0)
        connections.remove(busy, answering: "org.example.Slow")
        #expect(connections.takeCutOff() == ["org.example.Slow"])
    }

    /// A stopped server's `run()` returns only once every connection has closed and every task
    /// answering a call off the loop has ended, not when the last connection closes.
    @Test func allEndedWaitsForConnectionsAndTasks() async throws {
        let connections = OpenConnections()
        let open = try #require(connections.register(EmbeddedChannel()))
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let task = connections.startTask {
            for await _ in gate { break }
        }
        #expect(connections.drain() == 1)
        let finished = Mutex(false)
        let ended = Task {
            await connections.allEnded()
            finished.withLock { $0 = true }
        }
        connections.remove(open, answering: nil)
        #expect(connections.takeCutOff().isEmpty)
        for _ in 0..<100 { await Task.yield() }
        let endedEarly = finished.withLock { $0 }
        #expect(!endedEarly, "a task still runs")
        opening.yield()
        await task.value
        await ended.value
        // Once stopped and empty, it returns at once.
        await connections.allEnded()
    }
}
