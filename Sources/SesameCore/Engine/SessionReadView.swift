import FoundationEssentials
import Synchronization

/// The accounts as the engine last made them visible, readable without entering the engine. The
/// engine publishes every change here after it is saved (or, for the passing `refreshing` state,
/// when it is made), so a token lookup or a list is answered at once while the engine is busy
/// sealing and writing the store for someone else.
public final class SessionReadView: Sendable {
    private let accounts: Mutex<[String: StoredAccount]>

    init(_ accounts: [String: StoredAccount]) {
        self.accounts = Mutex(accounts)
    }

    /// Replaces what readers see; the dictionary is shared, not copied, until the engine next
    /// changes its own.
    func publish(_ accounts: [String: StoredAccount]) {
        self.accounts.withLock { $0 = accounts }
    }

    /// Every account, ordered by id.
    public func list() -> [Account] {
        accounts.withLock { $0 }.values.map(\.account).sorted { $0.id < $1.id }
    }

    /// The account with `id`.
    public func account(_ id: String) throws(SessionError) -> Account {
        guard let stored = accounts.withLock({ $0[id] }) else { throw .noSuchAccount(id) }
        return stored.account
    }

    /// The account with `id`, and the tokens the engine's `tokens(for:)` would hand out at once,
    /// without a refresh: the account is active (no refresh in flight) and its access token
    /// lasts beyond `refreshMargin` at `now`; nil tokens when only the engine can answer. One
    /// lookup (two, each copying the stored account out, were a tenth of a token
    /// answered at once).
    func accountAndTokens(_ id: String, now: Date, refreshMargin: Duration) throws(SessionError)
        -> (account: Account, tokens: TokenSet?)
    {
        guard let stored = accounts.withLock({ $0[id] }) else { throw .noSuchAccount(id) }
        // While a refresh runs (scheduled ahead of expiry, or asked for by someone else), a token
        // outside the refresh margin is still handed out at once: its holder need not wait for a
        // provider that may be slow to answer.
        guard stored.account.state == .active || stored.account.state == .refreshing, let tokens = stored.tokens
        else { return (stored.account, nil) }
        if let expiry = tokens.accessTokenExpiresAt, expiry.timeIntervalSince(now) <= refreshMargin.timeInterval {
            return (stored.account, nil)
        }
        return (stored.account, tokens)
    }
}

extension SessionEngine {
    /// The account with `id`, and its tokens when they can be handed out without a refresh,
    /// read without waiting for the engine (see `SessionReadView`); nil tokens mean ask
    /// `tokens(for:)`.
    public nonisolated func accountWithTokensWithoutWaiting(_ id: String) throws(SessionError)
        -> (account: Account, tokens: TokenSet?)
    {
        try view.accountAndTokens(id, now: clock.now, refreshMargin: policy.refreshMargin)
    }
}
