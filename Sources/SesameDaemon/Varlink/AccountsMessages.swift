import Foundation
import SesameCore

/// The parameters and replies of `io.sesame.Accounts`, as the handlers decode and encode them.
struct LoginParameters: Decodable {
    var provider: String
    var flow: String?
    var redirectUri: String?
    var scopes: [String]?
}

struct CompleteParameters: Decodable {
    var state: String
    var code: String
}

struct RejectedParameters: Decodable {
    var account: String
    var accessToken: String
}

struct RejectedReply: Encodable {
    var refreshed: Bool
}

struct LogoutReply: Encodable {
    var account: Account
    var revokedRemotely: Bool
    var notRevokedReason: String?
}

struct VerificationReply: Encodable {
    struct Verification: Encodable {
        var uri: String
        var uriComplete: String?
        var userCode: String
        var expiresAt: Date
    }
    var verification: Verification
}

struct AuthorizationReply: Encodable {
    struct Authorization: Encodable {
        var url: String
        var state: String
    }
    var authorization: Authorization
}

struct AccountParameter: Decodable {
    var account: String
}

struct AccountsReply: Encodable {
    var accounts: [Account]
}

struct AccountReply: Encodable {
    var account: Account
}

struct TokenReply: Encodable {
    var accessToken: String
    var tokenType: String
    var expiresAt: Date?
}

struct ImportParameters: Decodable {
    struct Tokens: Decodable {
        var accessToken: String
        var refreshToken: String?
        var idToken: String?
        var tokenType: String?
        var expiresIn: Int64?
        var refreshExpiresIn: Int64?
        var scopes: [String]?
    }

    var provider: String
    var subject: String
    var displayName: String?
    var owner: UInt32?
    var tokens: Tokens
}

struct RedeemParameters: Decodable {
    var provider: String
    var code: String
    var redirectUri: String?
    var codeVerifier: String?
    var state: String?
    var user: String?
    var displayName: String?
}

struct ProvidersReply: Encodable {
    struct Provider: Encodable {
        var name: String
        var type: String
        var flows: [String]
        var defaultFlow: String?
        var redirectUri: String?
        var loginUnavailable: String?
    }
    var providers: [Provider]
}
