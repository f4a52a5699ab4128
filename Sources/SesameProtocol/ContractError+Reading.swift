import SesameCore

extension ContractError {
    /// Reads an error reply back; nil for a name this version does not know or parameters that
    /// do not fit it.
    public init?(name: String, parameters: [String: Value]) {
        func text(_ key: String) -> String? {
            if case .string(let value)? = parameters[key] { value } else { nil }
        }
        func number(_ key: String) -> Int? {
            if case .int(let value)? = parameters[key] { Int(exactly: value) } else { nil }
        }
        func state(_ key: String) -> SessionState? { text(key).flatMap(SessionState.init(rawValue:)) }
        let short = name.split(separator: ".").last.map(String.init) ?? ""
        let read: ContractError? =
            switch short {
            case "NoSuchAccount": text("account").map { .noSuchAccount(account: $0) }
            case "NeedsLogin": text("account").map { .needsLogin(account: $0) }
            case "TokenExpired": text("account").map { .tokenExpired(account: $0) }
            case "RefreshFailed":
                text("account").flatMap { account in text("reason").map { .refreshFailed(account: account, reason: $0) }
                }
            case "InvalidTokens": text("reason").map { .invalidTokens(reason: $0) }
            case "InvalidTransition":
                text("account").flatMap { account in
                    state("from").flatMap { from in
                        state("to").map { .invalidTransition(account: account, from: from, to: $0) }
                    }
                }
            case "StoreFailed": .storeFailed
            case "NoSuchProvider": text("provider").map { .noSuchProvider(provider: $0) }
            case "NoSuchLogin": .noSuchLogin
            case "LoginDenied": .loginDenied
            case "LoginExpired": .loginExpired
            case "ProviderUnavailable": text("reason").map { .providerUnavailable(reason: $0) }
            case "ProviderFailed": text("reason").map { .providerFailed(reason: $0) }
            case "LoginUnsupported":
                text("provider").flatMap { provider in
                    text("reason").map { .loginUnsupported(provider: provider, reason: $0) }
                }
            case "TooManyLogins": number("limit").map { .tooManyLogins(limit: $0) }
            case "TooManyAccounts": number("limit").map { .tooManyAccounts(limit: $0) }
            case "TooManyProviderCalls":
                number("limit").flatMap { limit in
                    number("retryAfter").map { .tooManyProviderCalls(limit: limit, retryAfter: $0) }
                }
            case "InvalidName":
                text("name").flatMap { name in text("reason").map { .invalidName(name: name, reason: $0) } }
            case "NoIDToken":
                text("account").flatMap { account in text("reason").map { .noIDToken(account: account, reason: $0) } }
            case "NarrowingUnsupported":
                text("account").flatMap { account in
                    text("reason").map { .narrowingUnsupported(account: account, reason: $0) }
                }
            case "NarrowingRefused":
                text("account").flatMap { account in
                    text("reason").map { .narrowingRefused(account: account, reason: $0) }
                }
            case "ShareEnded":
                text("share").flatMap { share in text("reason").map { .shareEnded(share: share, reason: $0) } }
            case "NotShared": text("method").map { .notShared(method: $0) }
            case "TooManyShares": number("limit").map { .tooManyShares(limit: $0) }
            case "Lagged": number("queueLimit").map { .lagged(queueLimit: $0) }
            case "TooManySubscriptions": number("limit").map { .tooManySubscriptions(limit: $0) }
            case "MessageTooLarge": number("limit").map { .messageTooLarge(limit: $0) }
            case "InvalidMessage": text("reason").map { .invalidMessage(reason: $0) }
            case "InternalError": .internalError
            case "TooManyConnections": number("limit").map { .tooManyConnections(limit: $0) }
            default: nil
            }
        // The short name alone is not enough: it must be this error's own interface.
        guard let read, read.wire.name == name else { return nil }
        self = read
    }
}
