import Logging
import NIOCore
import SesameWire

/// One Varlink interface a server answers: its name, its description text, and its methods.
public protocol VarlinkInterface: Sendable {
    /// The qualified interface name, e.g. `io.sesame.Accounts`.
    var name: String { get }
    /// The interface definition served by `org.varlink.service.GetInterfaceDescription`.
    var interfaceDescription: String { get }
    /// Its dispatch table: each method to what answers it. Read once, when a server starts.
    /// Intermediate replies of a streaming call go through `VarlinkCallContext.send`, and an
    /// error reply is thrown (`VarlinkError`, or a `VarlinkErrorConvertible`).
    var methods: VarlinkMethods { get }
}

/// An error of a layer above the wire that knows its own Varlink error reply; the server sends
/// that reply instead of a generic internal error.
public protocol VarlinkErrorConvertible: Error {
    /// The reply this error becomes on the wire.
    var varlinkError: VarlinkError { get }
}

/// What a handler knows about the call it answers, and how it sends intermediate replies.
public struct VarlinkCallContext: Sendable {
    /// The calling process, as the kernel reported it when it connected.
    public let peer: PeerCredentials
    /// What the connection the call came on may call (`ConnectionScope`); shared by its calls.
    public let scope: ConnectionScope
    /// A logger that carries the peer's identity and the method as metadata, and spends
    /// what it logs from the peer's uid's budget (`BudgetedLogHandler`). Made when a handler
    /// asks for it: setting metadata costs (a stream handler renders it at once), and most
    /// calls log nothing.
    public var logger: Logger {
        guard let method else { return baseLogger }
        var logger = peer.logger(from: baseLogger, method: method)
        if let lineBudget {
            logger.handler = BudgetedLogHandler(wrapping: logger.handler, uid: peer.uid, budget: lineBudget)
        }
        return logger
    }
    private let baseLogger: Logger
    /// What the lines of each uid's calls are spent from; nil for in-process calls.
    private let lineBudget: PeerLogBudget?
    /// The method, for the logger's metadata; nil for in-process calls, whose logger is as
    /// given (with whatever metadata the caller put on it).
    private let method: String?
    private let outbound: Outbound
    private let streaming: Bool

    /// Whether the caller asked for more replies (`more`), which a method that may stream or
    /// answer once (a login) decides by.
    public var wantsMore: Bool { streaming }

    /// Where intermediate replies go: the peer's connection, or a handler's in-process caller.
    private enum Outbound: Sendable {
        case none
        case connection(ReplyWriter)
        case inProcess(InProcessReplies)
    }

    init(
        peer: PeerCredentials,
        scope: ConnectionScope,
        logger: Logger,
        lineBudget: PeerLogBudget,
        outbound: ReplyWriter?,
        call: VarlinkCall
    ) {
        self.peer = peer
        self.scope = scope
        self.baseLogger = logger
        self.lineBudget = lineBudget
        self.method = call.method
        self.outbound = call.oneway ? .none : outbound.map(Outbound.connection) ?? .none
        self.streaming = call.more
    }

    /// A context for calling a handler in-process, without a socket (tests, tools): the
    /// intermediate replies of a streaming call go to `send` (which throws once the caller has
    /// gone), `isReading` says after each reply of a reply stream whether the caller keeps up
    /// (false counts as a peer whose socket is full), and calls given the same `scope` act as
    /// calls on one connection. A reply stream calls both on the thread that sends, which for a
    /// subscription is the engine's event loop, one for every subscriber and every change: they
    /// must take their reply and return, never wait or call back into the daemon.
    public init(
        peer: PeerCredentials,
        scope: ConnectionScope = ConnectionScope(),
        logger: Logger,
        streaming: Bool,
        isReading: @escaping @Sendable () -> Bool = { true },
        send: @escaping @Sendable (VarlinkReply) throws -> Void
    ) {
        self.peer = peer
        self.scope = scope
        self.baseLogger = logger
        self.lineBudget = nil
        self.method = nil
        self.outbound = .inProcess(InProcessReplies(send: send, isReading: isReading))
        self.streaming = streaming
    }

    /// The same call on the same connection, answered as if `peer` had made it: for tests of
    /// per-caller checks over a real socket, whose every peer is the test process's own uid.
    func answered(as peer: PeerCredentials) -> VarlinkCallContext {
        VarlinkCallContext(
            peer: peer,
            scope: scope,
            baseLogger: baseLogger,
            lineBudget: lineBudget,
            method: method,
            outbound: outbound,
            streaming: streaming
        )
    }

    private init(
        peer: PeerCredentials,
        scope: ConnectionScope,
        baseLogger: Logger,
        lineBudget: PeerLogBudget?,
        method: String?,
        outbound: Outbound,
        streaming: Bool
    ) {
        self.peer = peer
        self.scope = scope
        self.baseLogger = baseLogger
        self.lineBudget = lineBudget
        self.method = method
        self.outbound = outbound
        self.streaming = streaming
    }

    /// A stream for this streaming call's intermediate replies that never waits
    /// (`VarlinkReplyStream`), for a call that sends many: the call ends with `error` if the
    /// peer falls more than `limit` replies behind. Nil for a call that is not streaming or asks
    /// for no reply (`oneway`), which sends with `send`. Returns once every reply sent with `send` has been written, so that
    /// the stream's replies come after them. The handler returns the
    /// stream with `VarlinkAnswer.continuing(on:)`, or cancels it: only a stream handed back is
    /// ended when the peer goes.
    public func replyStream(fallingBehindAfter limit: Int, then error: VarlinkError) async -> VarlinkReplyStream? {
        guard streaming else { return nil }
        let writer: ReplyWriter
        switch outbound {
        case .none: return nil
        case .inProcess(let replies):
            return VarlinkReplyStream(inProcess: replies, limit: limit, errorWhenBehind: error)
        case .connection(let connection): writer = connection
        }
        // A reply sent with `send` is written by a task of its own on the loop, and the
        // stream's by the loop's batch, which may have been queued before it: one more turn
        // of the loop and every reply sent before has been written.
        try? await writer.channel.eventLoop.submit {}.get()
        return VarlinkReplyStream(channel: writer.channel, limit: limit, errorWhenBehind: error)
    }

    /// Sends one intermediate reply (`"continues": true`) of a streaming call.
    ///
    /// Throws `ExpectedMore` when the caller did not ask for a stream, and the channel's error when
    /// the peer has gone away, which ends the handler.
    public func send(_ reply: VarlinkReply) async throws {
        guard streaming else { throw VarlinkError.expectedMore }
        switch outbound {
        case .none: break
        case .connection(let writer): try await writer.write(reply.frame(continues: true))
        case .inProcess(let replies): try replies.send(reply)
        }
    }
}

/// Decides, per peer, whether a new connection is served, e.g. to cap connections per uid.
public protocol VarlinkConnectionGate: Sendable {
    /// Nil to serve the connection, or the error to answer it with before closing it.
    func admit(_ peer: PeerCredentials) -> VarlinkError?
    /// Called once when a connection that `admit` let in has ended.
    func release(_ peer: PeerCredentials)
}
