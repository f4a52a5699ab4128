/// A peer broke the Varlink protocol: a message that is not a call (or reply), or one over the
/// size limit. A server answers with an error of the interface its user names
/// (`VarlinkServer.Configuration.protocolInterface`), then closes the connection.
public enum VarlinkProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not a well-formed message; the reason says what is wrong, never quoting much of it.
    case invalidMessage(String)
    /// Longer than the connection's limit, in bytes.
    case messageTooLarge(limit: Int)

    /// The error a server sends for it, named in `interface` (e.g. `io.sesame.Varlink`).
    public func varlinkError(in interface: String) -> VarlinkError {
        switch self {
        case .invalidMessage(let reason):
            VarlinkError(interface + ".InvalidMessage", parameters: ["reason": .string(reason)])
        case .messageTooLarge(let limit):
            VarlinkError(interface + ".MessageTooLarge", parameters: ["limit": .int(Int64(limit))])
        }
    }

    public var description: String {
        switch self {
        case .invalidMessage(let reason): "invalid message: \(reason)"
        case .messageTooLarge(let limit): "message over \(limit) bytes"
        }
    }
}
