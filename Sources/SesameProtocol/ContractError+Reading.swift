import SesameCore

extension ContractError {
    /// Reads an error reply back; nil for a name this version does not know or parameters that
    /// do not fit it.
    public init?(name: String, parameters: [String: Value]) {
        let short = name.split(separator: ".").last.map(String.init) ?? ""
        let fields = Fields(parameters)
        // The short name alone is not enough: it must be this error's own interface.
        guard let read = Self.readers[short]?(fields), read.wire.name == name else { return nil }
        self = read
    }

    /// An error reply's parameters, read by type.
    private struct Fields {
        let parameters: [String: Value]

        init(_ parameters: [String: Value]) { self.parameters = parameters }

        func text(_ key: String) -> String? {
            if case .string(let value)? = parameters[key] { value } else { nil }
        }

        func number(_ key: String) -> Int? {
            if case .int(let value)? = parameters[key] { Int(exactly: value) } else { nil }
        }

        func state(_ key: String) -> SessionState? { text(key).flatMap(SessionState.init(rawValue:)) }

        /// Two text fields, both present.
        func texts(_ first: String, _ second: String) -> (String, String)? {
            guard let one = text(first), let two = text(second) else { return nil }
            return (one, two)
        }
    }

    /// Each error's reader, by its short name: the one table from the wire back to Swift.
    private static let readers: [String: @Sendable (Fields) -> ContractError?] = [
        "NoSuchAccount": { $0.text("account").map { .noSuchAccount(account: $0) } },
        "NeedsLogin": { $0.text("account").map { .needsLogin(account: $0) } },
        "TokenExpired": { $0.text("account").map { .tokenExpired(account: $0) } },
        "RefreshFailed": { $0.texts("account", "reason").map { .refreshFailed(account: $0, reason: $1) } },
        "InvalidTokens": { $0.text("reason").map { .invalidTokens(reason: $0) } },
        "InvalidTransition": { fields in
            guard let account = fields.text("account"), let from = fields.state("from"), let to = fields.state("to")
            else { return nil }
            return .invalidTransition(account: account, from: from, to: to)
        },
        "StoreFailed": { _ in .storeFailed },
        "NoSuchProvider": { $0.text("provider").map { .noSuchProvider(provider: $0) } },
        "NoSuchLogin": { _ in .noSuchLogin },
        "LoginDenied": { _ in .loginDenied },
        "LoginExpired": { _ in .loginExpired },
        "ProviderUnavailable": { $0.text("reason").map { .providerUnavailable(reason: $0) } },
        "ProviderFailed": { $0.text("reason").map { .providerFailed(reason: $0) } },
        "LoginUnsupported": { $0.texts("provider", "reason").map { .loginUnsupported(provider: $0, reason: $1) } },
        "TooManyLogins": { $0.number("limit").map { .tooManyLogins(limit: $0) } },
        "TooManyAccounts": { $0.number("limit").map { .tooManyAccounts(limit: $0) } },
        "TooManyProviderCalls": { fields in
            guard let limit = fields.number("limit"), let retryAfter = fields.number("retryAfter") else { return nil }
            return .tooManyProviderCalls(limit: limit, retryAfter: retryAfter)
        },
        "TooManyChanges": { fields in
            guard let limit = fields.number("limit"), let retryAfter = fields.number("retryAfter") else { return nil }
            return .tooManyChanges(limit: limit, retryAfter: retryAfter)
        },
        "InvalidName": { $0.texts("name", "reason").map { .invalidName(name: $0, reason: $1) } },
        "NoIDToken": { $0.texts("account", "reason").map { .noIDToken(account: $0, reason: $1) } },
        "NarrowingUnsupported": {
            $0.texts("account", "reason").map { .narrowingUnsupported(account: $0, reason: $1) }
        },
        "NarrowingRefused": { $0.texts("account", "reason").map { .narrowingRefused(account: $0, reason: $1) } },
        "ShareEnded": { $0.texts("share", "reason").map { .shareEnded(share: $0, reason: $1) } },
        "NotShared": { $0.text("method").map { .notShared(method: $0) } },
        "TooManyShares": { $0.number("limit").map { .tooManyShares(limit: $0) } },
        "Lagged": { $0.number("queueLimit").map { .lagged(queueLimit: $0) } },
        "TooManySubscriptions": { $0.number("limit").map { .tooManySubscriptions(limit: $0) } },
        "MessageTooLarge": { $0.number("limit").map { .messageTooLarge(limit: $0) } },
        "InvalidMessage": { $0.text("reason").map { .invalidMessage(reason: $0) } },
        "InternalError": { _ in .internalError },
        "TooManyConnections": { $0.number("limit").map { .tooManyConnections(limit: $0) } },
    ]
}
