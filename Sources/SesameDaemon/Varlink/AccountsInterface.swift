import Foundation
import SesameCore
import SesameVarlink

/// `io.sesame.Accounts`: what programs and `sesamectl` ask about and do with accounts.
struct AccountsInterface: VarlinkInterface {
    let name = "io.sesame.Accounts"
    let interfaceDescription: String
    let engine: DaemonEngine

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        let caller = Caller(peer: context.peer)
        switch call.methodName {
        case "List":
            let accounts = await engine.list().filter(caller.mayAccess)
            return try VarlinkReply(AccountsReply(accounts: accounts))
        case "Get":
            let id = try call.decodeParameters(AccountParameter.self).account
            return try VarlinkReply(AccountReply(account: try await engine.account(id, visibleTo: caller)))
        case "ImportTokens":
            return try await importTokens(call, caller: caller, context: context)
        case "GetToken":
            let id = try call.decodeParameters(AccountParameter.self).account
            _ = try await engine.account(id, visibleTo: caller)
            let tokens = try await engine.tokens(for: id)
            return try VarlinkReply(
                TokenReply(
                    accessToken: tokens.accessToken,
                    tokenType: tokens.tokenType,
                    expiresAt: tokens.accessTokenExpiresAt
                )
            )
        case "Logout":
            let id = try call.decodeParameters(AccountParameter.self).account
            _ = try await engine.account(id, visibleTo: caller)
            let account = try await engine.logout(id)
            context.logger.info("logged out", metadata: ["account": "\(id)"])
            return try VarlinkReply(AccountReply(account: account))
        case "Remove":
            let id = try call.decodeParameters(AccountParameter.self).account
            _ = try await engine.account(id, visibleTo: caller)
            try await engine.remove(id)
            context.logger.info("account removed", metadata: ["account": "\(id)"])
            return .empty
        default:
            throw VarlinkError.methodNotFound(call.method)
        }
    }

    private func importTokens(_ call: VarlinkCall, caller: Caller, context: VarlinkCallContext) async throws
        -> VarlinkReply
    {
        let request = try call.decodeParameters(ImportParameters.self)
        let owner = request.owner ?? caller.peer.uid
        guard owner == caller.peer.uid || caller.isRoot else { throw VarlinkError.permissionDenied }
        let now = Date()
        let expiry = try request.tokens.expiresIn.map { seconds throws(VarlinkError) -> Date in
            guard seconds > 0 else { throw .invalidParameter("tokens") }
            return now.addingTimeInterval(TimeInterval(seconds))
        }
        let refreshExpiry = try request.tokens.refreshExpiresIn.map { seconds throws(VarlinkError) -> Date in
            guard seconds > 0 else { throw .invalidParameter("tokens") }
            return now.addingTimeInterval(TimeInterval(seconds))
        }
        let tokens = TokenSet(
            accessToken: request.tokens.accessToken,
            refreshToken: request.tokens.refreshToken,
            idToken: request.tokens.idToken,
            tokenType: request.tokens.tokenType ?? "Bearer",
            accessTokenExpiresAt: expiry,
            refreshTokenExpiresAt: refreshExpiry,
            scopes: request.tokens.scopes ?? []
        )
        let account = try await engine.importSession(
            ImportedSession(
                provider: request.provider,
                subject: request.subject,
                displayName: request.displayName,
                owner: owner,
                tokens: tokens
            )
        )
        context.logger.info(
            "tokens imported",
            metadata: ["account": "\(account.id)", "provider": "\(account.provider)"]
        )
        return try VarlinkReply(AccountReply(account: account))
    }
}

private struct AccountParameter: Decodable {
    var account: String
}

private struct AccountsReply: Encodable {
    var accounts: [Account]
}

private struct AccountReply: Encodable {
    var account: Account
}

private struct TokenReply: Encodable {
    var accessToken: String
    var tokenType: String
    var expiresAt: Date?
}

private struct ImportParameters: Decodable {
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
