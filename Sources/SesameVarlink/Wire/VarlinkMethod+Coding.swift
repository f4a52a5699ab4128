import SesameWire

extension VarlinkMethod where Parameters: Encodable {
    /// The call of this method with `parameters`, as a client sends it.
    public func call(_ parameters: Parameters, more: Bool = false) throws -> VarlinkCall {
        VarlinkCall(
            method: qualifiedName,
            parameters: try JSONValue(encoding: parameters).objectValue ?? [:],
            more: more
        )
    }
}

extension VarlinkMethod where Reply: Decodable {
    /// A reply to a call of this method, as its type.
    public func reply(from message: VarlinkReplyMessage) throws -> Reply {
        try message.decode(Reply.self)
    }
}
