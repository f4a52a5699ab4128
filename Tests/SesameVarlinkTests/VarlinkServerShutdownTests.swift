import Foundation
import Logging
import SesameVarlinkTesting
import SesameWire
import Testing

@testable import SesameVarlink

/// An interface whose `Wait` is answered only once the test opens the gate, and whose `Watch`
/// streams one reply and then waits (an hour) until it is cancelled.
private struct GatedInterface: VarlinkInterface {
    let name = "org.example.gated"
    let interfaceDescription = """
        interface org.example.gated
        method Wait() -> (done: bool)
        method Watch() -> (n: int)

        """
    let entered: AsyncStream<Void>.Continuation
    let gate: AsyncStream<Void>

    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.on(VarlinkMethod<[String: JSONValue], [String: Bool]>("Wait", of: name)) { [entered, gate] _, _ in
            entered.yield()
            for await _ in gate { break }
            return ["done": true]
        }
        methods.on(VarlinkMethod<[String: JSONValue], [String: Int]>("Watch", of: name)) { _, context in
            try await context.send(VarlinkReply(["n": 1]))
            try await Task.sleep(for: .seconds(3600))
            return ["n": 2]
        }
        return methods
    }
}

@Suite struct VarlinkServerShutdownTests {
    @Test func shutdownLetsTheCallBeingAnsweredFinishAndEndsEverythingElse() async throws {
        let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let test = try await TestServer.start([GatedInterface(entered: enteredContinuation, gate: gate)])
        let (server, path) = (test.server, test.path)

        let idle = try await VarlinkClient.connect(unixSocketPath: path)
        _ = try await idle.call("org.varlink.service.GetInfo")
        let watcher = try await VarlinkClient.connect(unixSocketPath: path)
        var watching = try await watcher.stream("org.example.gated.Watch").makeAsyncIterator()
        #expect(try await watching.next()?.parameters["n"] == 1)
        let busy = try await VarlinkClient.connect(unixSocketPath: path)
        let answer = Task { try await busy.call("org.example.gated.Wait") }
        for await _ in entered { break }

        server.shutdown()
        // The stream ends and the idle connection is closed, while the call being answered goes on.
        while let _ = try? await watching.next() {}
        await #expect(throws: VarlinkClientError.connectionClosed) {
            try await idle.call("org.varlink.service.GetInfo")
        }
        opening.yield()
        #expect(try await answer.value.parameters["done"] == true)
        try await test.stopped()
        #expect(!FileManager.default.fileExists(atPath: path), "the socket is gone once the server stopped")
        await #expect(throws: VarlinkClientError.connectionClosed) {
            try await busy.call("org.varlink.service.GetInfo")
        }
        for client in [idle, watcher, busy] { await client.close() }
    }
}
