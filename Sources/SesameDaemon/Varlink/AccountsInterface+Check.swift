import SesameCore
import SesameProtocol
import SesameProviders
import SesameVarlink

extension AccountsInterface {
    /// `Check`: asks the provider whether it still accepts the account's access token. A
    /// token it rejects is handled as `ReportRejected` does: one refresh, shared with every
    /// other caller, whose refusal leaves the account needing a login.
    func check(_ request: AccountParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> CheckReply
    {
        let account = try engine.account(request.account, for: caller, requiring: .use)
        let adapter = try providers.adapter(account.provider)
        let patience = adapter.configuration.requestTimeout
        // Spent before the token is read: reading it may refresh it at the provider too.
        try spendProviderCall(caller)
        let tokens = try await engine.tokens(for: account.id, waitingAtMost: patience)
        let (verdict, detail) = await Self.ask(adapter, about: tokens, of: account)
        var refreshed = false
        // The refresh a rejection leads to is one more call to the provider, paid for likewise.
        if verdict == .rejected, (try? spendProviderCall(caller)) != nil {
            let replaced = try? await engine.refresh(
                account.id,
                ifCurrentAccessToken: tokens.accessToken,
                waitingAtMost: patience
            )
            refreshed = replaced ?? false
        }
        context.logger.info(
            "access token checked at the provider",
            metadata: ["account": "\(account.id)", "verdict": "\(verdict.rawValue)", "refreshed": "\(refreshed)"]
        )
        let now = try await engine.account(account.id)
        return CheckReply(account: now, verdict: verdict, detail: detail, refreshed: refreshed)
    }

    /// The provider's verdict on `tokens`, and why when it is not `accepted`, in Sesame's own
    /// words: a provider's error text may quote what it was sent.
    private static func ask(_ adapter: any ProviderAdapter, about tokens: TokenSet, of account: Account) async
        -> (TokenVerdict, String?)
    {
        do {
            switch try await adapter.checkAccessToken(tokens, subject: account.subject) {
            case .accepted: return (.accepted, nil)
            case .rejected(let why): return (.rejected, why)
            case .cannotCheck(let why): return (.unknown, why)
            }
        } catch .transient {
            return (.unknown, "the provider is unavailable for now; try again later")
        } catch .misconfigured(let why), .untrustedCertificate(let why) {
            return (.unknown, why)
        } catch {
            return (.unknown, "the provider's answer to the check is not one sesamed can read")
        }
    }
}
