import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire

extension VarlinkError {
    /// The reply for one of the contract's named errors (`ContractError`, the one mapping).
    init(_ error: ContractError) {
        let (name, parameters) = error.wire
        self.init(
            name,
            parameters: parameters.mapValues { value in
                switch value {
                case .string(let text): .string(text)
                case .int(let number): .int(number)
                }
            }
        )
    }
}

/// Engine errors as the contract names them.
extension SessionError: VarlinkErrorConvertible {
    public var varlinkError: VarlinkError {
        switch self {
        case .noSuchAccount(let id): VarlinkError(.noSuchAccount(account: id))
        case .needsLogin(let id): VarlinkError(.needsLogin(account: id))
        case .tokenExpired(let id): VarlinkError(.tokenExpired(account: id))
        case .refreshFailed(let id, let reason): VarlinkError(.refreshFailed(account: id, reason: reason))
        case .invalidTokens(let reason): VarlinkError(.invalidTokens(reason: reason))
        // The reason is for the log, not the caller.
        case .storeFailed: VarlinkError(.storeFailed)
        case .tooManyAccounts(let limit): VarlinkError(.tooManyAccounts(limit: limit))
        case .invalidName(let name, let reason): VarlinkError(.invalidName(name: name, reason: reason))
        case .narrowingUnsupported(let id, let reason): VarlinkError(.narrowingUnsupported(account: id, reason: reason))
        case .narrowingRefused(let id, let reason): VarlinkError(.narrowingRefused(account: id, reason: reason))
        case .illegalTransition(let transition):
            VarlinkError(.invalidTransition(account: transition.account, from: transition.from, to: transition.to))
        }
    }
}
