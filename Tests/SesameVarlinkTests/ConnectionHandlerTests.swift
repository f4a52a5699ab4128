import NIOCore
import Testing

@testable import SesameVarlink

/// The connection handler on a testing channel, the peer played byte by byte: pipelined calls,
/// back-pressure both ways, the peer's half-close, a server that drains, and a streaming call
/// that ends with its peer. What the end-to-end tests see over real sockets, here in order and
/// without timing.
@Suite(.timeLimit(.minutes(1))) struct ConnectionHandlerTests {
    @Test func pipelinedCallsAreAnsweredInTheOrderSentWhetherOnTheLoopOrOff() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(
            steered("Later", #"{"text":"a"}"#),
            steered("Now"),
            steered("Later", #"{"text":"b"}"#)
        )
        #expect(try await connection.reply() == #"{"parameters":{"text":"a"}}"#)
        #expect(try await connection.reply() == #"{"parameters":{"at":"once"}}"#)
        #expect(try await connection.reply() == #"{"parameters":{"text":"b"}}"#)
    }

    @Test func nothingIsReadWhileACallIsAnsweredOffTheLoopAndTheHeldReadIsMadeAfter() async throws {
        let connection = try await ConnectionFixture()
        try await connection.askForRead()
        #expect(connection.reads.reads == 1)
        try await connection.send(steered("Held"))
        try await connection.askForRead()
        #expect(connection.reads.reads == 1)
        await connection.releases.release()
        #expect(try await connection.reply() == #"{"parameters":{}}"#)
        // The read asked for while the call was off the loop is made once the call is done.
        await connection.channel.testingEventLoop.run()
        #expect(connection.reads.reads == 2)
    }

    @Test func aPeerThatDoesNotReadItsRepliesHoldsBackTheCallsBehind() async throws {
        let connection = try await ConnectionFixture()
        try await connection.setWritable(false)
        try await connection.send(steered("Now"), steered("Now"))
        #expect(try await connection.repliesSent().count == 1)
        try await connection.askForRead()
        #expect(connection.reads.reads == 0)
        try await connection.setWritable(true)
        #expect(try await connection.repliesSent().count == 1)
        // The read asked for while the peer was not reading is made once it is.
        #expect(connection.reads.reads == 1)
    }

    @Test func aConnectionThatPipelinesManyCallsLetsTheOthersOnTheLoopGoFirst() async throws {
        let connection = try await ConnectionFixture()
        let calls = Array(repeating: steered("Now"), count: ConnectionStateMachine.callsInARow + 8)
        try await connection.sendBytes(calls.map { $0 + "\0" }.joined())
        #expect(try await connection.repliesSent().count == ConnectionStateMachine.callsInARow)
        await connection.channel.testingEventLoop.run()
        #expect(try await connection.repliesSent().count == 8)
    }

    @Test func aPeerThatHalfClosesGetsItsRepliesThenTheConnectionEnds() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(steered("Held"), steered("Now"))
        try await connection.closeInput()
        #expect(try await !connection.isClosed)
        await connection.releases.release()
        #expect(try await connection.reply() == #"{"parameters":{}}"#)
        #expect(try await connection.reply() == #"{"parameters":{"at":"once"}}"#)
        try await connection.waitUntilClosed()
    }

    @Test func aMessageCutOffByThePeersEndIsDroppedAndTheConnectionEnds() async throws {
        let connection = try await ConnectionFixture()
        try await connection.sendBytes(steered("Now") + "\0" + #"{"method":"org.exa"#)
        try await connection.closeInput()
        try await connection.waitUntilClosed()
        #expect(try await connection.repliesSent() == [#"{"parameters":{"at":"once"}}"#])
    }

    @Test func anOversizedMessageIsAnsweredWithItsErrorAfterTheCallsBeforeItThenTheConnectionEnds() async throws {
        let connection = try await ConnectionFixture(maximumMessageSize: 256)
        try await connection.sendBytes(steered("Now") + "\0" + String(repeating: " ", count: 300))
        try await connection.waitUntilClosed()
        let replies = try await connection.repliesSent()
        #expect(replies.first == #"{"parameters":{"at":"once"}}"#)
        #expect(replies.count == 2 && replies[1].contains("org.example.protocol.MessageTooLarge"))
    }

    @Test func aStreamingCallEndsWhenItsPeerHangsUpAndTheConnectionWithIt() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(steered("Stream", #"{"n":0}"#, more: true), steered("Now"))
        #expect(try await connection.reply() == #"{"continues":true,"parameters":{"i":0}}"#)
        try await connection.closeInput()
        try await connection.waitUntilClosed()
        // The call behind the abandoned stream is not answered: its reply would be read as the stream's.
        #expect(try await !connection.repliesSent().contains(#"{"parameters":{"at":"once"}}"#))
    }

    @Test func aDrainingServerLetsTheCallBeingAnsweredFinishThenEndsItsConnection() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(steered("Held"), steered("Now"))
        #expect(connection.connections.drain() == 1)
        #expect(try await !connection.isClosed)
        #expect(connection.stopReport.drainedSoFar == StopReport.Drained(answering: 1))
        await connection.releases.release()
        #expect(try await connection.reply() == #"{"parameters":{}}"#)
        try await connection.waitUntilClosed()
        // The call behind it is not started: the connection ends once its call is done.
        #expect(try await connection.repliesSent().isEmpty)
    }

    @Test func aDrainingServerEndsAConnectionOnceItsCallIsDone() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(steered("Held"))
        #expect(connection.connections.drain() == 1)
        await connection.releases.release()
        #expect(try await connection.reply() == #"{"parameters":{}}"#)
        try await connection.waitUntilClosed()
    }

    @Test func aDrainingServerClosesAnIdleConnectionAtOnce() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(steered("Now"))
        #expect(try await connection.reply() == #"{"parameters":{"at":"once"}}"#)
        #expect(connection.connections.drain() == 1)
        try await connection.waitUntilClosed()
        #expect(connection.stopReport.drainedSoFar == StopReport.Drained(idle: 1))
    }

    @Test func aDrainingServerCancelsAStreamingCall() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(steered("Stream", #"{"n":0}"#, more: true))
        #expect(try await connection.reply() == #"{"continues":true,"parameters":{"i":0}}"#)
        #expect(connection.connections.drain() == 1)
        try await connection.waitUntilClosed()
        #expect(connection.stopReport.drainedSoFar == StopReport.Drained(streaming: 1))
    }

    @Test func aHardStopClosesAConnectionWhoseCallIsBeingAnsweredAndReportsTheCall() async throws {
        let connection = try await ConnectionFixture()
        try await connection.send(steered("Held"))
        connection.connections.closeAll()
        try await connection.waitUntilClosed()
        await connection.releases.release()
        // Every connection is gone and the call's task has ended: nothing more can be written.
        await connection.connections.allEnded()
        await connection.tasks.allEnded()
        #expect(connection.stopReport.takeCutOff() == ["org.example.steered.Held"])
        #expect(try await connection.repliesSent().isEmpty)
    }
}
