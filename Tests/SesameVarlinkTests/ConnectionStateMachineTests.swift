import NIOCore
import Testing

@testable import SesameVarlink

/// The connection's decisions alone, event by event: which message is parsed where, when a read
/// may be made, when the loop is given to others, and how the connection ends.
@Suite struct ConnectionStateMachineTests {
    private typealias Machine = ConnectionStateMachine

    /// Each call of `count` as a NUL-ended message of `size` bytes, in one buffer.
    private func messages(_ count: Int, size: Int = 16) -> ByteBuffer {
        let message = "{" + String(repeating: " ", count: size - 2) + "}\0"
        return ByteBuffer(string: String(repeating: message, count: count))
    }

    /// The machine, driven step by step: a class, so that each step can be taken inside `#expect`.
    private final class Driver {
        var machine: Machine

        init(maximumMessageSize: Int) {
            machine = Machine(maximumMessageSize: maximumMessageSize)
        }

        /// The next step: the size of the message it parses and where, or the step's name.
        func next() -> String {
            switch machine.next() {
            case .parseOnLoop(let frame): "on loop \(frame.readableBytes)"
            case .parseOffLoop(let frame): "off loop \(frame.readableBytes)"
            case .refuse(let error): "refuse \(error)"
            case .end: "end"
            case .wait: "wait"
            }
        }

        // The machine's answers to each event, for `#expect`, which cannot call a mutating method.
        func read() -> Bool { machine.readRequested() }
        func receive(_ bytes: ByteBuffer) -> Bool { machine.received(bytes) }
        func heldRead() -> Bool { machine.takeHeldRead() }
        func cameBackToLoop() -> Bool { machine.cameBackToLoop() }
        func shouldYield() -> Bool { machine.shouldYield() }
        func resume() -> Bool { machine.resume() }
        func replied(peerHasRoom: Bool) -> Bool { machine.replied(peerHasRoom: peerHasRoom) }
        func peerMadeRoom() -> Bool { machine.peerMadeRoom() }
        func beginEnding() -> Bool { machine.beginEnding() }
    }

    @Test func messagesAreServedOneAtATimeAndNothingIsReadUntilAllAre() {
        let driver = Driver(maximumMessageSize: 1024)
        #expect(driver.read())
        #expect(driver.receive(messages(2)))
        #expect(!driver.read())
        #expect(driver.next() == "on loop 16")
        driver.machine.wentOffLoop(streaming: false)
        #expect(driver.next() == "wait")
        #expect(!driver.heldRead())
        #expect(driver.cameBackToLoop())
        #expect(driver.next() == "on loop 16")
        #expect(driver.next() == "wait")
        #expect(driver.heldRead())
        #expect(!driver.heldRead())
    }

    @Test func behindAStreamingCallReadingGoesOnUpToItsLimit() {
        let driver = Driver(maximumMessageSize: 1 << 20)
        _ = driver.receive(messages(1))
        _ = driver.machine.next()
        driver.machine.wentOffLoop(streaming: true)
        #expect(driver.machine.mayRead)
        _ = driver.receive(messages(1, size: Machine.streamingReadLimit))
        #expect(!driver.machine.mayRead)
        #expect(driver.next() == "wait")
    }

    @Test func aLargeMessageOrOnePastTheConnectionsShareOfTheLoopIsParsedOffIt() {
        let driver = Driver(maximumMessageSize: 1 << 20)
        _ = driver.receive(messages(1, size: LargeMessageLane.threshold + 1))
        #expect(driver.next() == "off loop \(LargeMessageLane.threshold + 1)")
        #expect(driver.machine.state == .offLoop(streaming: false))
        #expect(driver.cameBackToLoop())
        let half = Machine.bytesInARow / 2
        _ = driver.receive(messages(3, size: half))
        #expect(driver.next() == "on loop \(half)")
        #expect(driver.next() == "on loop \(half)")
        #expect(driver.next() == "off loop \(half)")
    }

    @Test func afterItsShareOfCallsTheConnectionYieldsUntilTheLoopComesBack() {
        let driver = Driver(maximumMessageSize: 1024)
        _ = driver.receive(messages(Machine.callsInARow + 1))
        driver.machine.turnBegins()
        for _ in 0..<Machine.callsInARow {
            #expect(driver.next() == "on loop 16")
        }
        #expect(driver.shouldYield())
        #expect(driver.machine.state == .yielding)
        #expect(driver.next() == "wait")
        #expect(driver.resume())
        driver.machine.turnBegins()
        #expect(driver.next() == "on loop 16")
        #expect(!driver.shouldYield())
    }

    @Test func aReplyThePeerHasNoRoomForHoldsTheNextCallUntilItMakesRoom() {
        let driver = Driver(maximumMessageSize: 1024)
        _ = driver.receive(messages(2))
        _ = driver.machine.next()
        #expect(!driver.replied(peerHasRoom: false))
        #expect(driver.next() == "wait")
        #expect(!driver.read())
        #expect(driver.peerMadeRoom())
        #expect(!driver.peerMadeRoom())
        #expect(driver.next() == "on loop 16")
    }

    @Test func thePeersEndIsServedAfterItsCallsAndAnUnfinishedMessageFailsFirst() {
        let driver = Driver(maximumMessageSize: 1024)
        _ = driver.receive(ByteBuffer(string: "{}\0{\"a\""))
        driver.machine.inputEnded()
        #expect(driver.machine.inputClosed)
        #expect(driver.next() == "on loop 2")
        #expect(driver.next() == "refuse truncatedMessage(bytes: 4)")
        #expect(driver.next() == "end")
    }

    @Test func endingDropsWhatWaitsAndHappensOnce() {
        let driver = Driver(maximumMessageSize: 1024)
        _ = driver.receive(messages(3))
        #expect(driver.beginEnding())
        #expect(!driver.beginEnding())
        #expect(driver.next() == "wait")
        #expect(!driver.machine.mayRead)
        #expect(!driver.cameBackToLoop())
        #expect(!driver.resume())
    }
}
