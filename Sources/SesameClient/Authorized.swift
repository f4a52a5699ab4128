import SesameCore

/// What the body given to `SesameClient.authorized` throws when the service it called refused the
/// token (an HTTP 401 under RFC 6750 §3.1 `invalid_token`); see `TokenRejectedError.check(status:)`.
public struct TokenRejectedError: Error, Sendable, Hashable {
    /// Creates the error.
    public init() {}

    /// Throws `TokenRejectedError` for HTTP status 401 (RFC 9110 §15.5.2: the credentials were not
    /// accepted); any other status is the caller's to judge. `status` is e.g. AsyncHTTPClient's
    /// `response.status.code`.
    public static func check(status: some BinaryInteger) throws(TokenRejectedError) {
        if status == 401 { throw TokenRejectedError() }
    }
}

extension SesameClient {
    /// Runs `body` with a current access token of `account` — the request wrapper every program
    /// that calls an API needs. When the body throws `TokenRejectedError`, the token is reported to
    /// sesamed (`ReportRejected`: one refresh, shared with every other caller holding the same
    /// token) and the body runs exactly once more, with the token the account then holds. A
    /// session that needs a new login ends in `SesameError.session(.needsLogin)`, which
    /// `SesameError.needsLogin` tells apart; a token refused again is the body's `TokenRejectedError`.
    public func authorized<Result: Sendable>(
        account: String,
        _ body: (AccessToken) async throws -> Result
    ) async throws -> Result {
        let token = try await accessToken(for: account)
        do {
            return try await body(token)
        } catch is TokenRejectedError {
            guard try await reportRejected(account: account, accessToken: token.accessToken) else {
                // Nothing new to try: the refresh was not possible (the session may need a login,
                // which asking for the token again says) or the token is still the current one.
                let current = try await accessToken(for: account)
                guard current.accessToken != token.accessToken else { throw TokenRejectedError() }
                return try await body(current)
            }
            return try await body(try await accessToken(for: account))
        }
    }
}

extension SesameError {
    /// Whether the account needs a new login before any token can be had: show the person how
    /// (`sesamectl login PROVIDER`) instead of retrying.
    public var needsLogin: Bool {
        switch self {
        case .session(.needsLogin): true
        default: false
        }
    }
}
