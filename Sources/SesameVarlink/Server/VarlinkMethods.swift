import SesameWire

/// What a handler answers a call of a method whose reply is `Reply`: a reply of that type, one
/// encoded earlier and kept, or, for a streaming call, the stream the call goes on through.
public struct VarlinkAnswer<Reply: Encodable & Sendable>: Sendable {
    /// The reply as the server sends it.
    public let reply: VarlinkReply

    /// Answers with `reply`.
    public init(_ reply: Reply) throws {
        self.reply = try VarlinkReply(reply)
    }

    private init(reply: VarlinkReply) {
        self.reply = reply
    }

    /// `reply` encoded and framed now, for an answer kept and given to many calls (a token to
    /// every caller): each then writes the one buffer.
    public static func prepared(_ reply: Reply) throws -> VarlinkAnswer {
        VarlinkAnswer(reply: try VarlinkReply(reply).framed(continues: false))
    }

    /// What a streaming call's handler returns to leave the call to `stream`: the call goes on,
    /// holding no task, until the stream ends (see `VarlinkReplyStream`).
    public static func continuing(on stream: VarlinkReplyStream) -> VarlinkAnswer {
        VarlinkAnswer(reply: .continuing(on: stream))
    }
}

/// An interface's dispatch table: each of its methods (`VarlinkMethod`) to the handler that
/// answers it off the event loop and, for a method that can answer without waiting, to what
/// answers it on the loop. The server and in-process callers answer from the same table.
public struct VarlinkMethods: Sendable {
    /// One method's entry.
    struct Entry: Sendable {
        /// The method's own name in UTF-8: a call's entry is found by comparing bytes.
        let name: [UInt8]
        /// Answers on the connection's event loop, or returns nil to leave the call to `handle`.
        let atOnce: (@Sendable (VarlinkCall, VarlinkCallContext) throws -> VarlinkReply?)?
        /// Answers on the cooperative pool.
        let handle: @Sendable (VarlinkCall, VarlinkCallContext) async throws -> VarlinkReply
    }

    /// The interface whose methods these are.
    public let interface: String
    private(set) var entries: [Entry] = []

    /// An empty table for the methods of `interface` (left empty by an interface that only
    /// declares errors).
    public init(of interface: String) {
        self.interface = interface
    }

    /// `method` answered off the loop by `handler`, given the call's decoded parameters.
    public mutating func on<Parameters: Decodable & Sendable, Reply: Encodable & Sendable>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ handler: @escaping @Sendable (Parameters, VarlinkCallContext) async throws -> Reply
    ) {
        answer(method) { parameters, context in try VarlinkAnswer(try await handler(parameters, context)) }
    }

    /// `method` answered on the connection's event loop, which every connection on that loop
    /// shares: only for what needs no waiting, no actor and little work (reading a published
    /// view, a constant).
    public mutating func onLoop<Parameters: Decodable & Sendable, Reply: Encodable & Sendable>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ handler: @escaping @Sendable (Parameters, VarlinkCallContext) throws -> Reply
    ) {
        let answer: @Sendable (VarlinkCall, VarlinkCallContext) throws -> VarlinkReply = { call, context in
            try VarlinkReply(handler(try call.decodeParameters(Parameters.self), context))
        }
        add(method, atOnce: answer) { call, context in try answer(call, context) }
    }

    /// `method`, which takes no parameters, answered on the connection's event loop as for
    /// `onLoop`, without a decoder: whatever parameters a call carries are ignored, as a decoder
    /// ignores members it does not know.
    public mutating func onLoop<Parameters: VarlinkNoParameters, Reply: Encodable & Sendable>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ handler: @escaping @Sendable (VarlinkCallContext) throws -> Reply
    ) {
        let answer: @Sendable (VarlinkCall, VarlinkCallContext) throws -> VarlinkReply = { _, context in
            try VarlinkReply(handler(context))
        }
        add(method, atOnce: answer) { call, context in try answer(call, context) }
    }

    /// `method` answered by `handler` with a `VarlinkAnswer` (a kept reply, or a stream), and first
    /// by `atOnce` on the connection's event loop, as for `onLoop`, where that has the answer:
    /// `atOnce` reads the call's parameters itself and returns nil to leave the call to `handler`.
    public mutating func answer<Parameters: Decodable & Sendable, Reply: Encodable & Sendable>(
        _ method: VarlinkMethod<Parameters, Reply>,
        atOnce: (@Sendable (VarlinkCall, VarlinkCallContext) throws -> VarlinkAnswer<Reply>?)? = nil,
        _ handler: @escaping @Sendable (Parameters, VarlinkCallContext) async throws -> VarlinkAnswer<Reply>
    ) {
        var replyAtOnce: (@Sendable (VarlinkCall, VarlinkCallContext) throws -> VarlinkReply?)?
        if let atOnce {
            replyAtOnce = { call, context in try atOnce(call, context)?.reply }
        }
        add(method, atOnce: replyAtOnce) { call, context in
            try await handler(try call.decodeParameters(Parameters.self), context).reply
        }
    }

    private mutating func add<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        atOnce: (@Sendable (VarlinkCall, VarlinkCallContext) throws -> VarlinkReply?)?,
        handle: @escaping @Sendable (VarlinkCall, VarlinkCallContext) async throws -> VarlinkReply
    ) {
        precondition(method.interface == interface, "\(method.qualifiedName) added to \(interface)'s table")
        precondition(!entries.contains { $0.name == Array(method.name.utf8) }, "\(method.qualifiedName) added twice")
        guard method.requiresMore else {
            entries.append(Entry(name: Array(method.name.utf8), atOnce: atOnce, handle: handle))
            return
        }
        // A method that only streams is never answered at once, which is asked only of calls
        // without `more`: such a call is refused here.
        entries.append(
            Entry(name: Array(method.name.utf8), atOnce: nil) { call, context in
                guard call.more else { throw VarlinkError.expectedMore }
                return try await handle(call, context)
            }
        )
    }

    /// The same table with every handler run inside `wrap`, which calls the handler given to it
    /// with the call's context (for example with a task-local value set); what answers on the
    /// loop is left as it is.
    public func wrappingHandlers(
        _ wrap:
            @escaping @Sendable (
                VarlinkCallContext, _ handle: @Sendable (VarlinkCallContext) async throws -> VarlinkReply
            ) async throws -> VarlinkReply
    ) -> VarlinkMethods {
        var wrapped = VarlinkMethods(of: interface)
        wrapped.entries = entries.map { entry in
            Entry(name: entry.name, atOnce: entry.atOnce) { call, context in
                try await wrap(context) { context in try await entry.handle(call, context) }
            }
        }
        return wrapped
    }

    /// The entry of the method `call` names, or nil when this table has none.
    func entry(for call: VarlinkCall) -> Entry? {
        call.withMethodName { name in
            entries.first { entry in
                entry.name.count == name.count && entry.name.withUnsafeBytes { JSONShape.same(name, $0) }
            }
        }
    }

    /// The answer to `call` on the event loop, as a server gives it there: nil when its method
    /// (or this call of it) is answered off the loop, or the table lacks it.
    public func answerAtOnce(_ call: VarlinkCall, context: VarlinkCallContext) throws -> VarlinkReply? {
        guard !call.more, let atOnce = entry(for: call)?.atOnce else { return nil }
        return try atOnce(call, context)
    }

    /// Answers `call` as a server does, without a connection (tools, tests): at once where the
    /// method can, else by its handler. Throws `MethodNotFound` when the table lacks the method.
    /// A call its handler left to a reply stream returns when the stream ends: with the
    /// stream's error if the caller fell behind, else `CancellationError` (as on a connection,
    /// such a call has no final reply); cancelling the waiting task ends the stream.
    public func answer(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        guard let entry = entry(for: call) else { throw VarlinkError.methodNotFound(call.method) }
        if !call.more, let atOnce = entry.atOnce, let reply = try atOnce(call, context) { return reply }
        let reply = try await entry.handle(call, context)
        guard let stream = reply.continuesOn else { return reply }
        if await stream.ended() == .fellBehind { throw stream.errorWhenBehind }
        throw CancellationError()
    }
}
