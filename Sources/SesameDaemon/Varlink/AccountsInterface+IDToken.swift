import Foundation
import SesameCore
import SesameProtocol
import SesameVarlink

extension AccountsInterface {
    /// `GetIDToken`: the account's current ID token. An expired one is renewed by a refresh
    /// (providers re-issue ID tokens on refresh, OpenID Connect Core §12.2, though they need
    /// not), counted as a call to the provider and made at most once in a while per account
    /// (`SessionEngine.refresh(_:ifCurrentAccessToken:)`), so asking again and again cannot
    /// make sesamed hammer a provider that re-issues none.
    func getIDToken(_ request: AccountParameters, _ caller: Caller) async throws -> VarlinkReply {
        let account = try engine.account(request.account, for: caller, requiring: .use)
        let patience = providers.patience(for: account.provider)
        var tokens = try await engine.tokens(for: account.id, waitingAtMost: patience)
        if let idToken = tokens.idToken, Self.expiry(of: idToken).map({ $0 <= engine.clock.now }) ?? false {
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
        let expiry = Self.expiry(of: idToken)
        if let expiry, expiry <= engine.clock.now {
            throw VarlinkError(
                .noIDToken(
                    account: request.account,
                    reason: "its ID token expired and the provider's refresh brought no new one; "
                        + "`sesamectl login \(account.provider)` gets one"
                )
            )
        }
        return try VarlinkReply(GetIDTokenReply(idToken: idToken, expiresAt: expiry))
    }

    /// The `exp` claim of a JWT, read without checking its signature: sesamed checked this ID
    /// token when it received it, and only needs to know how long it lasts.
    static func expiry(of jwt: String) -> Date? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        guard let data = Data(base64Encoded: payload),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let exp = claims["exp"] as? NSNumber
        else { return nil }
        return Date(timeIntervalSince1970: exp.doubleValue)
    }
}
