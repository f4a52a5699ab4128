import SesameProtocol

extension SesameError {
    /// Sesamed's named errors in plain words. A provider's failure reason comes from sesamed
    /// already worded (e.g. "the provider refused: invalid_grant").
    static func text(of error: ContractError) -> String {
        switch error {
        case .noSuchProvider(let provider): "no provider named \(provider) is configured"
        case .noSuchLogin: "no such login is waiting (it was finished, expired, or never started)"
        case .loginDenied: "the login was denied"
        case .loginExpired: "the login was not completed in time"
        case .providerUnavailable(let reason):
            "the provider cannot be reached now\(reason.isEmpty ? "" : " (\(reason))"); try again later"
        case .loginUnsupported(_, let reason): reason.isEmpty ? "this provider cannot log in that way" : reason
        case .providerFailed(let reason): reason.isEmpty ? "the provider failed" : reason
        case .invalidTransition(let account, let from, let to):
            from == to
                ? "account \(account) is already \(from.rawValue)"
                : "account \(account) cannot go from \(from.rawValue) to \(to.rawValue)"
        case .messageTooLarge(let limit): "the request was larger than sesamed accepts (\(limit) bytes)"
        case .invalidMessage(let reason): "sesamed could not read the request: \(reason)"
        case .internalError: "sesamed failed unexpectedly; see its log"
        case .noIDToken(let account, let reason): "\(account) has no ID token to give: \(reason)"
        case .shareEnded(_, let reason): "the share has ended: \(reason)"
        case .notShared(let method): "the share this connection comes through does not allow \(method)"
        case .tooManyShares(let limit): "this user has \(limit) shares open already, as many as sesamed allows"
        default: "\(error)"
        }
    }
}
