import FoundationEssentials
import SesameClient
import SesameCore
import SesameProtocol

extension Status {
    /// What `status ACCOUNT` says about the account under its first line: its token times, its
    /// last and next refresh, and its last error with when it happened, each only when known.
    static func details(of account: Account, now: Date = Date()) -> [String] {
        var lines: [String] = []
        if let expiry = account.accessTokenExpiresAt {
            lines.append("access token: " + (expiry > now ? "until \(Formatting.time(expiry))" : "expired"))
        }
        if let end = account.refreshTokenExpiresAt {
            lines.append("refresh token: until \(Formatting.time(end)), as the provider said")
        }
        if let last = account.lastRefreshAt {
            lines.append("last refresh: \(Formatting.time(last))")
        }
        if let next = account.nextRefreshAt, account.state.canRefresh {
            lines.append("next refresh: \(Formatting.time(next))")
        }
        if let error = account.lastError {
            let when = account.lastErrorAt.map { Formatting.time($0) + ": " } ?? ""
            lines.append("last error: \(when)\(error.forDisplay(limit: 300))")
        }
        return lines.map { "  " + $0 }
    }

    /// One account's status as a JSON object: whether it is usable, and the account's times.
    struct AccountStatus: Encodable {
        var account: String
        var usable: Bool
        var state: SessionState?
        var checked: TokenVerdict?
        var accessTokenExpiresAt: Date?
        var refreshTokenExpiresAt: Date?
        var lastRefreshAt: Date?
        var nextRefreshAt: Date?
        var lastError: String?
        var lastErrorAt: Date?

        init(_ id: String, usable: Bool, _ account: Account?, checked: TokenVerdict? = nil) {
            self.account = id
            self.usable = usable
            self.state = account?.state
            self.checked = checked
            self.accessTokenExpiresAt = account?.accessTokenExpiresAt
            self.refreshTokenExpiresAt = account?.refreshTokenExpiresAt
            self.lastRefreshAt = account?.lastRefreshAt
            self.nextRefreshAt = account.flatMap { $0.state.canRefresh ? $0.nextRefreshAt : nil }
            self.lastError = account?.lastError
            self.lastErrorAt = account?.lastErrorAt
        }
    }
}
