import SesameWire

/// Calls of a `VarlinkMethod`: its parameters and reply as the method's types, so a call cannot
/// send or expect another method's.
extension VarlinkClient {
    /// Calls `method` with `parameters` and returns its reply; an error reply is thrown as `VarlinkError`.
    public func call<Parameters: Encodable & Sendable, Reply: Decodable & Sendable>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ parameters: Parameters
    )
        async throws -> Reply
    {
        try method.reply(from: await call(method.qualifiedName, parameters: try members(of: parameters)))
    }

    /// Calls `method` with `more`, as `stream(_:parameters:)`: each reply is read with
    /// `method.reply(from:)`, or looked at first (a kind of reply a later server added).
    public func stream<Parameters: Encodable & Sendable, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ parameters: Parameters
    )
        throws -> AsyncThrowingStream<VarlinkReplyMessage, any Error>
    {
        try stream(method.qualifiedName, parameters: try members(of: parameters))
    }

    private func members(of parameters: some Encodable) throws -> [String: JSONValue] {
        try JSONValue(encoding: parameters).objectValue ?? [:]
    }
}

extension VarlinkOneShot {
    /// Calls `method` with `parameters` on a connection of its own, as `call(_:parameters:unixSocketPath:)`.
    public static func call<Parameters: Encodable & Sendable, Reply: Decodable & Sendable>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ parameters: Parameters,
        unixSocketPath path: String
    ) throws -> Reply {
        let members = try JSONValue(encoding: parameters).objectValue ?? [:]
        return try method.reply(from: call(method.qualifiedName, parameters: members, unixSocketPath: path))
    }
}
