import Foundation
import Logging
import NIOPosix
import SesameWire
import Testing

@testable import SesameVarlink

/// A small interface that exercises single, streaming and failing calls.
struct TestInterface: VarlinkInterface {
    let name = "org.example.test"
    let interfaceDescription = """
        interface org.example.test
        method Echo(text: string) -> (text: string)
        method Count(n: int) -> (i: int)
        method Peer() -> (uid: int, pid: int)
        method Where(padding: string) -> (onEventLoop: bool)
        method WhereElse() -> (onEventLoop: bool)
        error Boom ()

        """

    typealias Members = [String: JSONValue]
    struct Text: Codable, Sendable { var text: String }
    struct Count: Codable, Sendable { var n: Int }
    struct Index: Codable, Sendable { var i: Int }
    struct Location: Codable, Sendable { var onEventLoop: Bool }
    struct Identity: Codable, Sendable { var uid, pid: Int }

    static let echo = VarlinkMethod<Text, Text>("Echo", of: "org.example.test")
    static let count = VarlinkMethod<Count, Index>("Count", of: "org.example.test")
    static let peer = VarlinkMethod<Members, Identity>("Peer", of: "org.example.test")
    static let whereNow = VarlinkMethod<Members, Location>("Where", of: "org.example.test")
    static let whereElse = VarlinkMethod<Members, Location>("WhereElse", of: "org.example.test")
    static let boom = VarlinkMethod<Members, Members>("Boom", of: "org.example.test")

    /// Where the call is answered: on an event loop or off it.
    private static var location: Location { Location(onEventLoop: MultiThreadedEventLoopGroup.currentEventLoop != nil) }

    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.on(Self.echo) { text, _ in text }
        methods.on(Self.count) { count, context in
            guard context.wantsMore else { throw VarlinkError.expectedMore }
            for i in 0..<(count.n - 1) { try await context.send(VarlinkReply(Index(i: i))) }
            return Index(i: count.n - 1)
        }
        methods.on(Self.peer) { _, context in Identity(uid: Int(context.peer.uid), pid: Int(context.peer.pid)) }
        methods.on(Self.whereElse) { _, _ in Self.location }
        methods.answer(Self.whereNow, atOnce: { _, _ in try VarlinkAnswer(Self.location) }) { _, context in
            let reply = Self.location
            if context.wantsMore { try await context.send(VarlinkReply(reply)) }
            return try VarlinkAnswer(reply)
        }
        methods.on(Self.boom) { _, _ -> Members in throw VarlinkError("org.example.test.Boom") }
        return methods
    }
}

func withServer(
    maximumMessageSize: Int = 4096,
    gate: (any VarlinkConnectionGate)? = nil,
    _ body: (String) async throws -> Void
) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("varlink-\(UUID().uuidString)")
    let path = directory.appendingPathComponent("nested/test.socket").path
    defer { try? FileManager.default.removeItem(at: directory) }
    let server = try await VarlinkServer.bind(
        .path(path, mode: 0o600),
        configuration: .init(
            maximumMessageSize: maximumMessageSize,
            info: .init(vendor: "Test", product: "test", version: "1", url: ""),
            protocolInterface: "test.Protocol",
            connectionGate: gate
        ),
        interfaces: [TestInterface()],
        logger: Logger(label: "test")
    )
    let running = Task { try await server.run() }
    try await body(path)
    running.cancel()
    try await running.value
}

@Suite struct VarlinkServerTests {
    @Test func answersGetInfoAndDescriptions() async throws {
        try await withServer { path in
            let client = try await VarlinkClient.connect(unixSocketPath: path)
            let info = try await client.call("org.varlink.service.GetInfo")
            #expect(info.parameters["interfaces"] == ["org.example.test", "org.varlink.service"])
            let description = try await client.call(
                "org.varlink.service.GetInterfaceDescription",
                parameters: ["interface": "org.example.test"]
            )
            #expect(description.parameters["description"]?.stringValue?.hasPrefix("interface org.example.test") == true)
            await #expect(throws: VarlinkError.interfaceNotFound("org.example.nothing")) {
                try await client.call(
                    "org.varlink.service.GetInterfaceDescription",
                    parameters: ["interface": "org.example.nothing"]
                )
            }
            await client.close()
        }
    }

    /// A call its interface answers at once is answered on the event loop that reads its
    /// connection, with no hop to another thread; any other, a large one and a streaming one
    /// are answered off the loops, by `handle`.
    @Test func answersOnTheConnectionsEventLoopAndLargeCallsOffIt() async throws {
        try await withServer(maximumMessageSize: 1 << 20) { path in
            let client = try await VarlinkClient.connect(unixSocketPath: path)
            let small = try await client.call("org.example.test.Where", parameters: ["padding": ""])
            #expect(small.parameters["onEventLoop"] == true)
            let undeclared = try await client.call("org.example.test.WhereElse")
            #expect(undeclared.parameters["onEventLoop"] == false, "only what the interface declares runs on the loop")
            let padding = String(repeating: "x", count: LargeMessageLane.threshold)
            let large = try await client.call("org.example.test.Where", parameters: ["padding": .string(padding)])
            #expect(large.parameters["onEventLoop"] == false)
            for try await reply in try await client.stream("org.example.test.Where", parameters: ["padding": ""]) {
                #expect(reply.parameters["onEventLoop"] == false, "a streaming call runs on the pool")
            }
            await client.close()
        }
    }

    @Test func pipelinedConcurrentCallsEachGetTheirOwnReply() async throws {
        try await withServer { path in
            let client = try await VarlinkClient.connect(unixSocketPath: path)
            try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for i in 0..<200 {
                    group.addTask {
                        let reply = try await client.call(
                            "org.example.test.Echo",
                            parameters: ["text": .string("m\(i)")]
                        )
                        return (i, reply.parameters["text"]?.stringValue)
                    }
                }
                for try await (i, text) in group {
                    #expect(text == "m\(i)")
                }
            }
            await client.close()
        }
    }

    @Test func streamsRepliesUntilOneWithoutContinues() async throws {
        try await withServer { path in
            let client = try await VarlinkClient.connect(unixSocketPath: path)
            var seen: [JSONValue?] = []
            for try await reply in try await client.stream("org.example.test.Count", parameters: ["n": 3]) {
                seen.append(reply.parameters["i"])
            }
            #expect(seen == [0, 1, 2])
            await #expect(throws: VarlinkError.expectedMore) {
                try await client.call("org.example.test.Count", parameters: ["n": 3])
            }
            await client.close()
        }
    }

    @Test func abandoningAStreamHangsUpRatherThanBlockLaterCalls() async throws {
        try await withServer { path in
            let client = try await VarlinkClient.connect(unixSocketPath: path)
            for try await reply in try await client.stream("org.example.test.Count", parameters: ["n": 1_000_000]) {
                #expect(reply.parameters["i"] == 0)
                break
            }
            // Without the hang-up this call would wait behind a million replies.
            await #expect(throws: VarlinkClientError.connectionClosed) {
                try await client.call("org.example.test.Echo", parameters: ["text": "after"])
            }
            let fresh = try await VarlinkClient.connect(unixSocketPath: path)
            #expect(
                try await fresh.call("org.example.test.Echo", parameters: ["text": "hi"]).parameters["text"] == "hi"
            )
            await fresh.close()
        }
    }

    @Test func namesUnknownInterfacesMethodsAndBadParameters() async throws {
        try await withServer { path in
            let client = try await VarlinkClient.connect(unixSocketPath: path)
            await #expect(throws: VarlinkError.interfaceNotFound("org.example.other")) {
                try await client.call("org.example.other.Echo")
            }
            await #expect(throws: VarlinkError.methodNotFound("org.example.test.Nope")) {
                try await client.call("org.example.test.Nope")
            }
            await #expect(throws: VarlinkError.invalidParameter("text")) {
                try await client.call("org.example.test.Echo", parameters: ["text": 5])
            }
            await #expect(throws: VarlinkError("org.example.test.Boom")) {
                try await client.call("org.example.test.Boom")
            }
            // The connection survives every error above.
            #expect(
                try await client.call("org.example.test.Echo", parameters: ["text": "ok"]).parameters["text"] == "ok"
            )
            await client.close()
        }
    }

    @Test func handsTheKernelsPeerCredentialsToHandlers() async throws {
        try await withServer { path in
            let client = try await VarlinkClient.connect(unixSocketPath: path)
            let reply = try await client.call("org.example.test.Peer")
            #expect(reply.parameters["uid"] == .int(Int64(getuid())))
            #expect(reply.parameters["pid"] == .int(Int64(getpid())))
            await client.close()
        }
    }

    @Test func closesAfterAnOversizedMessageAndKeepsServingOthers() async throws {
        try await withServer { path in
            let bystander = try await VarlinkClient.connect(unixSocketPath: path)
            let offender = try await VarlinkClient.connect(unixSocketPath: path)
            let big = String(repeating: "x", count: 8192)
            // The server names its protocol errors in the interface its user gave it.
            await #expect(throws: VarlinkError("test.Protocol.MessageTooLarge", parameters: ["limit": 4096])) {
                try await offender.call("org.example.test.Echo", parameters: ["text": .string(big)])
            }
            await #expect(throws: VarlinkClientError.connectionClosed) {
                try await offender.call("org.example.test.Echo", parameters: ["text": "again"])
            }
            #expect(
                try await bystander.call("org.example.test.Echo", parameters: ["text": "hi"]).parameters["text"] == "hi"
            )
            await bystander.close()
        }
    }

    @Test func setsTheSocketModeAndRefusesToStealALiveSocket() async throws {
        try await withServer { path in
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            await #expect(throws: VarlinkEndpointError.alreadyInUse(path: path)) {
                _ = try await VarlinkServer.bind(
                    .path(path, mode: 0o600),
                    configuration: .init(
                        info: .init(vendor: "", product: "", version: "", url: ""),
                        protocolInterface: "test.Protocol"
                    ),
                    interfaces: [],
                    logger: Logger(label: "test")
                )
            }
        }
    }

    @Test func stoppingWhileClientsConnectNeitherTrapsNorHangs() async throws {
        // Connections accepted while the server stops must be closed, not dropped half-made.
        for _ in 0..<20 {
            try await withServer { path in
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            guard let client = try? await VarlinkClient.connect(unixSocketPath: path) else { return }
                            _ = try? await client.call("org.example.test.Echo", parameters: ["text": "x"])
                            await client.close()
                        }
                    }
                }
            }
        }
    }

    @Test func replacesAStaleSocketButNeverAFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("varlink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("plain").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("keep".utf8)))
        #expect(throws: VarlinkEndpointError.notASocket(path: file)) { try UnixSocketPath.prepare(file) }
        #expect(FileManager.default.contents(atPath: file) == Data("keep".utf8))

        let stale = directory.appendingPathComponent("stale.socket").path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(stale.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        close(fd)  // bound but never listening: what a crashed daemon leaves behind
        try UnixSocketPath.prepare(stale)
        #expect(!FileManager.default.fileExists(atPath: stale))
    }
}
