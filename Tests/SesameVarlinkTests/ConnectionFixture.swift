import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import SesameWire

@testable import SesameVarlink

/// An interface whose calls the tests steer: `Now` is answered on the event loop, `Later` off
/// it, `Held` once the test releases it, and `Stream` sends `n` replies, or, with `n` = 0, until
/// it is cancelled.
struct SteeredInterface: VarlinkInterface {
    let name = "org.example.steered"
    let interfaceDescription = """
        interface org.example.steered
        method Now() -> (at: string)
        method Later(text: string) -> (text: string)
        method Held() -> ()
        method Stream(n: int) -> (i: int)

        """
    let releases: Releases

    typealias Members = [String: JSONValue]
    struct Text: Codable, Sendable { var text: String }
    struct Count: Codable, Sendable { var n: Int }
    struct Index: Codable, Sendable { var i: Int }

    var methods: VarlinkMethods {
        let interface = name
        var methods = VarlinkMethods(of: name)
        methods.onLoop(VarlinkMethod<Members, Members>("Now", of: interface)) { _, _ in ["at": "once"] }
        methods.on(VarlinkMethod<Text, Text>("Later", of: interface)) { text, _ in text }
        methods.on(VarlinkMethod<Members, Members>("Held", of: interface)) { [releases] _, _ in
            await releases.wait()
            return [:]
        }
        methods.on(VarlinkMethod<Count, Index>("Stream", of: interface)) { count, context in
            var i = 0
            while count.n == 0 || i < count.n - 1 {
                try await context.send(VarlinkReply(Index(i: i)))
                i += 1
                if count.n == 0 { try await Task.sleep(for: .milliseconds(1)) }
            }
            return Index(i: i)
        }
        return methods
    }
}

/// Lets `Held` calls finish, one per release, in the order they began waiting.
actor Releases {
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var released = 0

    /// Returns once a release is given for this call.
    func wait() async {
        if released > 0 {
            released -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Lets the oldest waiting call (or the next to wait) finish.
    func release() {
        if waiting.isEmpty {
            released += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Counts the reads the connection handler lets through to the channel: it sits between the
/// handler and the channel's head, so it sees a read only when the handler passes it on.
final class ReadCounter: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = ByteBuffer
    private let count = NIOLockedValueBox(0)
    var reads: Int { count.withLockedValue { $0 } }

    func read(context: ChannelHandlerContext) {
        count.withLockedValue { $0 += 1 }
        context.read()
    }
}

/// One connection handler on a `NIOAsyncTestingChannel`, as the server would set it up, with the
/// steered interface behind it: the tests play the peer, byte by byte, and read what it is sent.
struct ConnectionFixture {
    let channel = NIOAsyncTestingChannel()
    let connections = OpenConnections()
    /// What the connection reports of a stop, and the tasks it starts, as its server holds them.
    let stopReport: StopReport
    let tasks: OffLoopTasks
    let releases = Releases()
    let reads = ReadCounter()

    /// A connection whose messages may be `maximumMessageSize` bytes.
    init(maximumMessageSize: Int = 4096) async throws {
        let interface = SteeredInterface(releases: releases)
        let shared = VarlinkConnectionHandler.Shared(
            answerer: CallAnswerer(
                interfaces: [interface.name: interface],
                protocolInterface: "org.example.protocol",
                logger: Logger(label: "test")
            ),
            connections: connections,
            gate: nil,
            maximumMessageSize: maximumMessageSize,
            unfinished: UnfinishedMessages(timeout: .seconds(60), bytesPerUser: 1 << 20)
        )
        (stopReport, tasks) = (shared.stopReport, shared.tasks)
        try await channel.connect(to: SocketAddress(unixDomainSocketPath: "/test"))
        guard let id = connections.register(channel) else { throw ChannelError.ioOnClosedChannel }
        // The handler is made on the channel's loop, where it lives (it is not Sendable).
        try await channel.testingEventLoop.executeInContext { [channel, reads] in
            let handler = VarlinkConnectionHandler(
                shared: shared,
                id: id,
                peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000)
            )
            try channel.pipeline.syncOperations.addHandlers([reads, handler])
        }
    }

    /// Sends `messages` as the peer would, in one read, each ended by its NUL.
    func send(_ messages: String...) async throws {
        try await sendBytes(messages.map { $0 + "\0" }.joined())
    }

    /// Sends `text` exactly as given, in one read.
    func sendBytes(_ text: String) async throws {
        try await channel.writeInbound(ByteBuffer(string: text))
    }

    /// The peer shuts down its sending side.
    func closeInput() async throws {
        try await channel.testingEventLoop.executeInContext {
            channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
    }

    /// NIO asks for the next read, as it does once a read is done.
    func askForRead() async throws {
        try await channel.testingEventLoop.executeInContext { channel.pipeline.read() }
    }

    /// The peer's socket has room again (`writable`) or is full.
    func setWritable(_ writable: Bool) async throws {
        channel.isWritable = writable
        try await channel.testingEventLoop.executeInContext { channel.pipeline.fireChannelWritabilityChanged() }
    }

    /// The next message sent to the peer, waiting for it; the empty write that marks the end of
    /// a connection is skipped.
    func reply() async throws -> String {
        while true {
            let bytes = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
            if bytes.readableBytes > 0 { return String(buffer: bytes).replacingOccurrences(of: "\0", with: "") }
        }
    }

    /// Every message sent to the peer so far and not yet taken, without waiting.
    func repliesSent() async throws -> [String] {
        var replies: [String] = []
        while let bytes = try await channel.readOutbound(as: ByteBuffer.self) {
            if bytes.readableBytes > 0 {
                replies.append(String(buffer: bytes).replacingOccurrences(of: "\0", with: ""))
            }
        }
        return replies
    }

    /// Whether the connection was closed.
    var isClosed: Bool {
        get async throws { try await channel.testingEventLoop.executeInContext { !channel.isActive } }
    }

    /// Waits until the connection is closed.
    func waitUntilClosed() async throws {
        try await channel.closeFuture.get()
    }
}

/// A call to a method of the steered interface, as JSON.
func steered(_ method: String, _ parameters: String = "{}", more: Bool = false) -> String {
    #"{"method":"org.example.steered.\#(method)","parameters":\#(parameters)\#(more ? #","more":true"# : "")}"#
}
