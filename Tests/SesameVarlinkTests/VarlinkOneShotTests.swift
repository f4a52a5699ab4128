import Dispatch
import Foundation
import Testing

@testable import SesameVarlink

/// One call with blocking system calls (`VarlinkOneShot`), against the real server: the reply,
/// an error reply as the error, and the connection's failures as `VarlinkClientError`.
@Suite struct VarlinkOneShotTests {
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
        try await withServer { path in
            let reply = try await call("org.example.test.Echo", ["text": "ok"], at: path)
            #expect(reply.parameters["text"] == "ok")
            await #expect(throws: VarlinkError("org.example.test.Boom")) {
                try await call("org.example.test.Boom", at: path)
            }
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
