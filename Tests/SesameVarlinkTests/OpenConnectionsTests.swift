import NIOCore
import NIOEmbedded
import Testing

@testable import SesameVarlink

@Suite struct OpenConnectionsTests {
    /// A hard stop cancels the connections' tasks at the same moment as it closes them, so a
    /// connection may end of its cancellation before `closeAll()` runs; what it was answering
    /// must still be reported as cut off, not lost.
    @Test func aConnectionEndedByCancellationBeforeCloseAllIsStillReportedCutOff() throws {
        let connections = OpenConnections()
        let busy = try #require(connections.register(EmbeddedChannel()))
        let idle = try #require(connections.register(EmbeddedChannel()))
        let finished = try #require(connections.register(EmbeddedChannel()))
        #expect(connections.begin(busy, method: "org.example.Slow"))
        connections.remove(finished, cancelled: false)

        connections.remove(busy, cancelled: true)
        connections.closeAll()
        connections.remove(idle, cancelled: true)

        #expect(connections.takeCutOff().sorted { ($0 ?? "") < ($1 ?? "") } == [nil, "org.example.Slow"])
        #expect(connections.takeCutOff().isEmpty, "the record is taken once")
    }

    /// Connections that end on their own before a hard stop are not reported as cut off.
    @Test func connectionsThatEndedBeforeAHardStopAreNotCutOff() throws {
        let connections = OpenConnections()
        let done = try #require(connections.register(EmbeddedChannel()))
        #expect(connections.begin(done, method: "org.example.Quick"))
        #expect(connections.end(done))
        connections.remove(done, cancelled: false)
        connections.closeAll()
        #expect(connections.takeCutOff().isEmpty)
    }
}
