import Foundation
import Testing

@testable import SesameVarlink

/// One call with blocking system calls (`VarlinkOneShot`), against the real server: the reply,
/// an error reply as the error, and the connection's failures as `VarlinkClientError`.
@Suite struct VarlinkOneShotTests {
    @Test func aCallGetsItsReplyAndAnErrorReplyIsThrown() async throws {
        try await withServer { path in
            let reply = try VarlinkOneShot.call(
                "org.example.test.Echo",
                parameters: ["text": "ok"],
                unixSocketPath: path
            )
            #expect(reply.parameters["text"] == "ok")
            #expect(throws: VarlinkError("org.example.test.Boom")) {
                try VarlinkOneShot.call("org.example.test.Boom", unixSocketPath: path)
            }
            // A reply longer than the client takes is refused, not read on and on.
            let long = String(repeating: "x", count: 2000)
            #expect(throws: VarlinkClientError.invalidReply("a reply longer than 1024 bytes")) {
                try VarlinkOneShot.call(
                    "org.example.test.Echo",
                    parameters: ["text": .string(long)],
                    unixSocketPath: path,
                    maximumMessageSize: 1024
                )
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
