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
        func parsedOffLoop() -> Bool { machine.parsedOffLoop() }
        func shouldYield() -> Bool { machine.shouldYield() }
        func resume() -> Bool { machine.resume() }
        func beginEnding() -> Bool { machine.beginEnding() }
        func callAbandoned() -> Bool { machine.callAbandoned() }

        /// Starts the call of the message just served.
        func start(_ method: String = "org.example.Call", streaming: Bool = false) -> Bool {
            machine.callStarted(method: method, oneway: false, streaming: streaming)
        }

        /// A driver whose connection has received `count` calls and is answering the first.
        static func answering(
            _ method: String = "org.example.Call",
            streaming: Bool = false,
            of count: Int = 1
        ) -> Driver {
            let driver = Driver(maximumMessageSize: 1024)
            _ = driver.machine.received(ByteBuffer(string: String(repeating: "{}\0", count: count)))
            _ = driver.machine.next()
            _ = driver.machine.callStarted(method: method, oneway: false, streaming: streaming)
            return driver
        }

        /// What follows the reply, by name: "waits" while the peer has no room.
        func replied(peerHasRoom: Bool) -> String { name(machine.replied(peerHasRoom: peerHasRoom)) }
        func peerMadeRoom() -> String { name(machine.peerMadeRoom()) }

        /// What a stop asks, by name, with the method of any call it cancels.
        func stop(_ stop: OpenConnections.Stop) -> String {
            switch machine.stopRequested(stop) {
            case .closeNow(let call): "close now" + (call.map { " cancelling \($0.method)" } ?? "")
            case .cancelStreaming(let call): "cancel \(call.method)"
            case .letFinish: "let finish"
            case .nothing: "nothing"
            }
        }

        /// The state's name, without what it holds.
        var state: String {
            switch machine.state {
            case .idle: "idle"
            case .parsing: "parsing"
            case .answering: "answering"
            case .waitingForPeer: "waiting for peer"
            case .yielding: "yielding"
            case .ending(let call): "ending" + (call.map { " \($0.method)" } ?? "")
            case .closed(let call): "closed" + (call.map { " \($0.method)" } ?? "")
            }
        }

        private func name(_ after: Machine.AfterCall?) -> String {
            switch after {
            case nil: "waits"
            case .serveNext?: "serve next"
            case .endConnection?: "end connection"
            }
        }
    }

    @Test func messagesAreServedOneAtATimeAndNothingIsReadUntilAllAre() {
        let driver = Driver(maximumMessageSize: 1024)
        #expect(driver.read())
        #expect(driver.receive(messages(2)))
        #expect(!driver.read())
        #expect(driver.next() == "on loop 16")
        #expect(driver.start())
        #expect(driver.next() == "wait")
        #expect(!driver.heldRead())
        #expect(driver.replied(peerHasRoom: true) == "serve next")
        #expect(driver.next() == "on loop 16")
        #expect(driver.next() == "wait")
        #expect(driver.heldRead())
        #expect(!driver.heldRead())
    }

    @Test func behindAStreamingCallReadingGoesOnUpToItsLimit() {
        let driver = Driver(maximumMessageSize: 1 << 20)
        _ = driver.receive(messages(1))
        _ = driver.machine.next()
        #expect(driver.start(streaming: true))
        #expect(driver.machine.mayRead)
        _ = driver.receive(messages(1, size: Machine.streamingReadLimit))
        #expect(!driver.machine.mayRead)
        #expect(driver.next() == "wait")
    }

    @Test func aLargeMessageOrOnePastTheConnectionsShareOfTheLoopIsParsedOffIt() {
        let driver = Driver(maximumMessageSize: 1 << 20)
        _ = driver.receive(messages(1, size: LargeMessageLane.threshold + 1))
        #expect(driver.next() == "off loop \(LargeMessageLane.threshold + 1)")
        #expect(driver.state == "parsing")
        #expect(driver.parsedOffLoop())
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
        #expect(driver.state == "yielding")
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
        #expect(driver.start())
        #expect(driver.replied(peerHasRoom: false) == "waits")
        #expect(driver.next() == "wait")
        #expect(!driver.read())
        #expect(driver.peerMadeRoom() == "serve next")
        #expect(driver.peerMadeRoom() == "waits", "no reply waits any more")
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
        #expect(!driver.parsedOffLoop())
        #expect(!driver.resume())
        #expect(!driver.start(), "no call starts on a connection that is ending")
    }

    @Test func aGracefulStopClosesAnIdleConnectionAndLetsACallFinishFirst() {
        let idle = Driver(maximumMessageSize: 1024)
        #expect(idle.stop(.graceful) == "close now")
        #expect(idle.state == "closed")

        let busy = Driver.answering("org.example.Slow", of: 2)
        #expect(busy.state == "answering")
        #expect(busy.stop(.graceful) == "let finish")
        #expect(busy.stop(.graceful) == "nothing", "a second stop is no news")
        #expect(busy.replied(peerHasRoom: false) == "waits")
        #expect(busy.peerMadeRoom() == "end connection", "the call behind it is not started")
    }

    @Test func aGracefulStopCancelsAStreamingCallAndAHardOneCutsOffAnyCall() {
        let streaming = Driver.answering("org.example.Watch", streaming: true)
        #expect(streaming.stop(.graceful) == "cancel org.example.Watch")
        #expect(!streaming.callAbandoned(), "the cancelled call ends the connection")
        #expect(streaming.state == "closed")

        let busy = Driver.answering("org.example.Slow")
        #expect(busy.stop(.hard) == "close now cancelling org.example.Slow")
        #expect(busy.state == "closed org.example.Slow", "kept for the report of what was cut off")
        #expect(busy.stop(.graceful) == "nothing")
    }

    @Test func aGracefulStopClosesAConnectionThatIsEndingAndOneClosedIsNotToldAgain() {
        let ending = Driver(maximumMessageSize: 1024)
        #expect(ending.beginEnding())
        #expect(ending.stop(.graceful) == "close now", "a peer that stopped reading holds no stop up")
        #expect(ending.stop(.graceful) == "nothing", "a closed connection hears no graceful stop")

        let streaming = Driver.answering("org.example.Watch", streaming: true)
        #expect(streaming.beginEnding())
        #expect(streaming.stop(.graceful) == "cancel org.example.Watch")
    }

    @Test func aParseOrCallBackFromOffTheLoopStartsNothingOnceTheChannelClosed() {
        let driver = Driver(maximumMessageSize: 1 << 20)
        _ = driver.receive(messages(1, size: LargeMessageLane.threshold + 1))
        #expect(driver.next() == "off loop \(LargeMessageLane.threshold + 1)")
        _ = driver.machine.closed()
        #expect(!driver.parsedOffLoop())
        #expect(!driver.start())
        #expect(driver.state == "closed")

        // A call the peer hung up on is left to finish, unless the server stops hard.
        let hungUp = Driver.answering("org.example.Slow")
        _ = hungUp.machine.closed()
        #expect(hungUp.stop(.graceful) == "nothing")
        #expect(hungUp.stop(.hard) == "close now cancelling org.example.Slow")
    }

    @Test func anAbandonedCallIsFollowedByTheNextUnlessThePeerHungUp() {
        let driver = Driver.answering(of: 2)
        #expect(driver.callAbandoned())
        #expect(driver.next() == "on loop 2")
        #expect(driver.start())
        driver.machine.inputEnded()
        #expect(!driver.callAbandoned(), "replies to the calls behind it would be read as its own")
        #expect(driver.state == "closed")
    }
}
