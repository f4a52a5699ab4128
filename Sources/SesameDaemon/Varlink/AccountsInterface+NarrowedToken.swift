import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameVarlink
import SesameWire

extension AccountsInterface {
    /// `GetToken` with scopes, an audience or a resource: a token made for that alone, by token
    /// exchange (RFC 8693) for the account's own. One held is handed out again while good; one
    /// to be had counts as a call to the provider. Through a share only fewer scopes may be asked
    /// for: a token for another audience or resource would be a grant the owner never gave it.
    func narrowedToken(_ request: GetTokenParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> GetTokenReply
    {
        try Self.checkBounds(request)
        if caller.share != nil, request.audience != nil || request.resource != nil {
            throw VarlinkError(.notShared(method: "io.sesame.Accounts.GetToken with an audience or a resource"))
        }
        let account = try engine.account(request.account, for: caller, requiring: .use)
        let narrowing = request.narrowing
        // Fewer scopes for the account's own audience are a subset of the grant (RFC 8693 §5
        // leaves the rest to the server); another audience may have scopes of its own.
        if narrowing.audience == nil, narrowing.resource == nil, !account.scopes.isEmpty,
            let scope = narrowing.scopes.first(where: { !account.scopes.contains($0) })
        {
            throw VarlinkError(
                .narrowingRefused(
                    account: account.id,
                    reason:
                        "sesamed refuses it without asking the provider: the scope \(scope) was not granted to "
                        + "this account, which has \(account.scopes.joined(separator: " ")); ask for some of those"
                )
            )
        }
        if await !engine.holdsNarrowedToken(account.id, for: narrowing) { try spendProviderCall(caller) }
        let tokens = try await engine.tokens(
            for: account.id,
            narrowedTo: narrowing,
            waitingAtMost: providers.patience(for: account.provider)
        )
        caller.share?.handedOut("a narrowed access token", of: account.id, logger: context.logger)
        return GetTokenReply(
            accessToken: tokens.accessToken,
            tokenType: tokens.tokenType,
            expiresAt: tokens.accessTokenExpiresAt
        )
    }

    /// Refuses a request larger than any narrowing needs, before anything is kept or sent.
    private static func checkBounds(_ request: GetTokenParameters) throws {
        let scopes = request.scopes ?? []
        guard scopes.count <= TokenNarrowing.scopeLimit,
            scopes.allSatisfy({ Self.isScopeToken($0) })
        else { throw VarlinkError.invalidParameter("scopes") }
        for (name, value) in [("audience", request.audience), ("resource", request.resource)] {
            guard let value else { continue }
            guard !value.isEmpty, value.utf8.count <= TokenNarrowing.lengthLimit,
                !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else { throw VarlinkError.invalidParameter(name) }
        }
        // RFC 8707 §2: an absolute URI without a fragment.
        if let resource = request.resource {
            guard let url = URL(string: resource), url.scheme != nil, url.fragment == nil else {
                throw VarlinkError.invalidParameter("resource")
            }
        }
    }

    /// RFC 6749 §3.3: a scope token is one or more of %x21 / %x23-5B / %x5D-7E.
    private static func isScopeToken(_ scope: String) -> Bool {
        !scope.isEmpty && scope.utf8.count <= 256
            && scope.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }
}
