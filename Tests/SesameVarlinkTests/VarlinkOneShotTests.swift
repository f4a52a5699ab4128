import Dispatch
import Foundation
import NIOCore
import SesameWire
import Testing

@testable import SesameVarlink

/// One call with blocking system calls (`VarlinkOneShot`), against the real server: the reply,
/// an error reply as the error, and the connection's failures as `VarlinkClientError`.
@Suite struct VarlinkOneShotTests {
    /// A program that makes one call starts no event loop, so SIGPIPE keeps its default action:
    /// a peer that closed (a share that ended, whose forwarded connection is closed at once) must
    /// make the write fail, not end the program without a word. In a child process, since the
    /// test runner's own SIGPIPE must stay as it is.
    @Test func aPeerThatHasClosedFailsTheCallInsteadOfKillingTheProgram() async {
        await #expect(processExitsWith: .success) {
            signal(SIGPIPE, SIG_DFL)
            var pair: [CInt] = [0, 0]
            guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0, &pair) == 0 else { exit(2) }
            close(pair[1])
            do {
                try BlockingCall.send(Array("{}\0".utf8), to: pair[0])
                exit(3)
            } catch BlockingCallError.connectionClosed {
                exit(0)
            } catch {
                exit(4)
            }
        }
    }

    /// `VarlinkOneShot.call` on a thread of its own: it blocks, and a blocked thread of the
    /// cooperative pool (two on this machine) would starve the server and the other tests.
    private func call(
        _ method: String,
        _ parameters: [String: JSONValue] = [:],
        at path: String,
        maximumMessageSize: Int = 16 << 20
    ) async throws -> VarlinkReplyMessage {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        try VarlinkOneShot.call(
                            method,
                            parameters: parameters,
                            unixSocketPath: path,
                            maximumMessageSize: maximumMessageSize
                        )
                    }
                )
            }
        }
    }

    @Test func aCallGetsItsReplyAndAnErrorReplyIsThrown() async throws {
        try await withServer(maximumMessageSize: 1 << 16) { path in
            let reply = try await call("org.example.test.Echo", ["text": "ok"], at: path)
            #expect(reply.parameters["text"] == "ok")
            await #expect(throws: VarlinkError("org.example.test.Boom")) {
                try await call("org.example.test.Boom", at: path)
            }
            // A reply longer than one read (16 KiB) is put together from several.
            let longer = String(repeating: "y", count: 40_000)
            let echoed = try await call("org.example.test.Echo", ["text": .string(longer)], at: path)
            #expect(echoed.parameters["text"] == .string(longer))
            // A reply longer than the client takes is refused, not read on and on.
            let long = String(repeating: "x", count: 2000)
            await #expect(throws: VarlinkClientError.invalidReply("a reply longer than 1024 bytes")) {
                try await call("org.example.test.Echo", ["text": .string(long)], at: path, maximumMessageSize: 1024)
            }
        }
    }

    @Test func nothingListeningIsCannotConnect() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("none-\(UUID().uuidString)").path
        #expect {
            try VarlinkOneShot.call("org.example.test.Echo", unixSocketPath: path)
        } throws: { error in
            guard case .cannotConnect(path, _)? = error as? VarlinkClientError else { return false }
            return true
        }
    }
}
