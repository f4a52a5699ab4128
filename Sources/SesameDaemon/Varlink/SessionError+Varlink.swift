import SesameCore
import SesameVarlink

/// The one place engine errors become Varlink error replies.
extension SessionError: VarlinkErrorConvertible {
    public var varlinkError: VarlinkError {
        let interface = "io.sesame.Accounts."
        switch self {
        case .noSuchAccount(let id):
            return VarlinkError(interface + "NoSuchAccount", parameters: ["account": .string(id)])
        case .needsLogin(let id):
            return VarlinkError(interface + "NeedsLogin", parameters: ["account": .string(id)])
        case .tokenExpired(let id):
            return VarlinkError(interface + "TokenExpired", parameters: ["account": .string(id)])
        case .refreshFailed(let id, let reason):
            return VarlinkError(
                interface + "RefreshFailed",
                parameters: ["account": .string(id), "reason": .string(reason)]
            )
        case .invalidTokens(let reason):
            return VarlinkError(interface + "InvalidTokens", parameters: ["reason": .string(reason)])
        case .storeFailed:
            // The reason is for the log, not the caller.
            return VarlinkError(interface + "StoreFailed")
        case .illegalTransition(let transition):
            return VarlinkError(
                interface + "InvalidTransition",
                parameters: [
                    "account": .string(transition.account),
                    "from": .string(transition.from.rawValue),
                    "to": .string(transition.to.rawValue),
                ]
            )
        }
    }
}
