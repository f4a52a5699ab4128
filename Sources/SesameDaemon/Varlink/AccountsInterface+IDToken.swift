import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameProviders
import SesameVarlink
import SesameWire

extension AccountsInterface {
    /// `GetIDToken`: the account's current ID token. An expired one is renewed by a refresh
    /// (providers re-issue ID tokens on refresh, OpenID Connect Core §12.2, though they need
    /// not), counted as a call to the provider and made at most once in a while per account
    /// (`SessionEngine.refresh(_:ifCurrentAccessToken:)`), so asking again and again cannot
    /// make sesamed hammer a provider that re-issues none.
    func getIDToken(_ request: AccountParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> GetIDTokenReply
    {
        let account = try engine.account(request.account, for: caller, requiring: .use)
        let patience = providers.patience(for: account.provider)
        var tokens = try await engine.tokens(for: account.id, waitingAtMost: patience)
        if let idToken = tokens.idToken, CheckedIDToken.expiry(of: idToken).map({ $0 <= engine.clock.now }) ?? false {
            try spendProviderCall(caller)
            if try await engine.refresh(account.id, ifCurrentAccessToken: tokens.accessToken, waitingAtMost: patience) {
                tokens = try await engine.tokens(for: account.id, waitingAtMost: patience)
            }
        }
        guard let idToken = tokens.idToken else {
            throw VarlinkError(
                .noIDToken(
                    account: request.account,
                    reason: "the provider gave this account no ID token (its login did not ask for openid, or the "
                        + "provider issues none)"
                )
            )
        }
        let expiry = CheckedIDToken.expiry(of: idToken)
        if let expiry, expiry <= engine.clock.now {
            throw VarlinkError(
                .noIDToken(
                    account: request.account,
                    reason: "its ID token expired and the provider's refresh brought no new one; "
                        + "`sesamectl login \(account.provider)` gets one"
                )
            )
        }
        caller.share?.handedOut("an ID token", of: account.id, logger: context.logger)
        return GetIDTokenReply(idToken: idToken, expiresAt: expiry)
    }
}
