import SesameCore

/// Every named error of sesamed's interfaces (`error` in interfaces/*.varlink), with its
/// parameters: the one mapping between Varlink error names and Swift. The daemon answers with
/// these; SesameClient reads them back.
public enum ContractError: Error, Sendable, Hashable, CustomStringConvertible {
    // io.sesame.Accounts
    case noSuchAccount(account: String)
    case needsLogin(account: String)
    case tokenExpired(account: String)
    case refreshFailed(account: String, reason: String)
    case invalidTokens(reason: String)
    case invalidTransition(account: String, from: SessionState, to: SessionState)
    case storeFailed
    case noSuchProvider(provider: String)
    case noSuchLogin
    case loginDenied
    case loginExpired
    case providerUnavailable(reason: String)
    case providerFailed(reason: String)
    case loginUnsupported(provider: String, reason: String)
    case tooManyLogins(limit: Int)
    case tooManyAccounts(limit: Int)
    case tooManyProviderCalls(limit: Int, retryAfter: Int)
    case tooManyChanges(limit: Int, retryAfter: Int)
    case invalidName(name: String, reason: String)
    case noIDToken(account: String, reason: String)
    case narrowingUnsupported(account: String, reason: String)
    case narrowingRefused(account: String, reason: String)
    // io.sesame.Shares
    case shareEnded(share: String, reason: String)
    case notShared(method: String)
    case tooManyShares(limit: Int)
    // io.sesame.Events
    case lagged(queueLimit: Int)
    case tooManySubscriptions(limit: Int)
    // io.sesame.Varlink
    case messageTooLarge(limit: Int)
    case invalidMessage(reason: String)
    case internalError
    case tooManyConnections(limit: Int)

    /// A parameter value of an error: every error parameter is a string or an int.
    public enum Value: Sendable, Hashable {
        case string(String)
        case int(Int64)
    }

    /// The error's fully qualified Varlink name and its parameters.
    public var wire: (name: String, parameters: [String: Value]) {
        let (interface, name, parameters) = parts
        return ("\(interface).\(name)", parameters)
    }

    private var parts: (String, String, [String: Value]) {
        let accounts = AccountsContract.interface
        switch self {
        case .noSuchAccount(let account): return (accounts, "NoSuchAccount", ["account": .string(account)])
        case .needsLogin(let account): return (accounts, "NeedsLogin", ["account": .string(account)])
        case .tokenExpired(let account): return (accounts, "TokenExpired", ["account": .string(account)])
        case .refreshFailed(let account, let reason):
            return (accounts, "RefreshFailed", ["account": .string(account), "reason": .string(reason)])
        case .invalidTokens(let reason): return (accounts, "InvalidTokens", ["reason": .string(reason)])
        case .invalidTransition(let account, let from, let to):
            let parameters: [String: Value] = [
                "account": .string(account), "from": .string(from.rawValue), "to": .string(to.rawValue),
            ]
            return (accounts, "InvalidTransition", parameters)
        case .storeFailed: return (accounts, "StoreFailed", [:])
        case .noSuchProvider(let provider): return (accounts, "NoSuchProvider", ["provider": .string(provider)])
        case .noSuchLogin: return (accounts, "NoSuchLogin", [:])
        case .loginDenied: return (accounts, "LoginDenied", [:])
        case .loginExpired: return (accounts, "LoginExpired", [:])
        case .providerUnavailable(let reason): return (accounts, "ProviderUnavailable", ["reason": .string(reason)])
        case .providerFailed(let reason): return (accounts, "ProviderFailed", ["reason": .string(reason)])
        case .loginUnsupported(let provider, let reason):
            return (accounts, "LoginUnsupported", ["provider": .string(provider), "reason": .string(reason)])
        case .tooManyLogins(let limit): return (accounts, "TooManyLogins", ["limit": .int(Int64(limit))])
        case .tooManyAccounts(let limit): return (accounts, "TooManyAccounts", ["limit": .int(Int64(limit))])
        case .tooManyProviderCalls(let limit, let retryAfter):
            let parameters: [String: Value] = ["limit": .int(Int64(limit)), "retryAfter": .int(Int64(retryAfter))]
            return (accounts, "TooManyProviderCalls", parameters)
        case .tooManyChanges(let limit, let retryAfter):
            let parameters: [String: Value] = ["limit": .int(Int64(limit)), "retryAfter": .int(Int64(retryAfter))]
            return (accounts, "TooManyChanges", parameters)
        case .invalidName(let name, let reason):
            return (accounts, "InvalidName", ["name": .string(name), "reason": .string(reason)])
        case .noIDToken(let account, let reason):
            return (accounts, "NoIDToken", ["account": .string(account), "reason": .string(reason)])
        case .narrowingUnsupported(let account, let reason):
            return (accounts, "NarrowingUnsupported", ["account": .string(account), "reason": .string(reason)])
        case .narrowingRefused(let account, let reason):
            return (accounts, "NarrowingRefused", ["account": .string(account), "reason": .string(reason)])
        case .shareEnded(let share, let reason):
            return (SharesContract.interface, "ShareEnded", ["share": .string(share), "reason": .string(reason)])
        case .notShared(let method): return (SharesContract.interface, "NotShared", ["method": .string(method)])
        case .tooManyShares(let limit):
            return (SharesContract.interface, "TooManyShares", ["limit": .int(Int64(limit))])
        case .lagged(let limit): return (EventsContract.interface, "Lagged", ["queueLimit": .int(Int64(limit))])
        case .tooManySubscriptions(let limit):
            return (EventsContract.interface, "TooManySubscriptions", ["limit": .int(Int64(limit))])
        case .messageTooLarge(let limit): return (Self.varlink, "MessageTooLarge", ["limit": .int(Int64(limit))])
        case .invalidMessage(let reason): return (Self.varlink, "InvalidMessage", ["reason": .string(reason)])
        case .internalError: return (Self.varlink, "InternalError", [:])
        case .tooManyConnections(let limit): return (Self.varlink, "TooManyConnections", ["limit": .int(Int64(limit))])
        }
    }

    /// The interface of sesamed's protocol-level errors.
    public static let varlink = "io.sesame.Varlink"

    /// One of each, for the contract test and for reading names back.
    public static let examples: [ContractError] = [
        .noSuchAccount(account: ""), .needsLogin(account: ""), .tokenExpired(account: ""),
        .refreshFailed(account: "", reason: ""), .invalidTokens(reason: ""),
        .invalidTransition(account: "", from: .active, to: .active), .storeFailed, .noSuchProvider(provider: ""),
        .noSuchLogin, .loginDenied, .loginExpired, .providerUnavailable(reason: ""), .providerFailed(reason: ""),
        .loginUnsupported(provider: "", reason: ""), .tooManyLogins(limit: 0), .tooManyAccounts(limit: 0),
        .tooManyProviderCalls(limit: 0, retryAfter: 0), .tooManyChanges(limit: 0, retryAfter: 0),
        .invalidName(name: "", reason: ""),
        .noIDToken(account: "", reason: ""), .narrowingUnsupported(account: "", reason: ""),
        .narrowingRefused(account: "", reason: ""), .shareEnded(share: "", reason: ""), .notShared(method: ""),
        .tooManyShares(limit: 0), .lagged(queueLimit: 0),
        .tooManySubscriptions(limit: 0), .messageTooLarge(limit: 0), .invalidMessage(reason: ""), .internalError,
        .tooManyConnections(limit: 0),
    ]

    public var description: String {
        let (name, parameters) = wire
        return parameters.isEmpty ? name : "\(name) \(parameters.keys.sorted().joined(separator: ", "))"
    }
}
