import Foundation
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

    /// The tokens the engine's `tokens(for:)` would hand out at once, without a refresh: the
    /// account is active (no refresh in flight) and its access token lasts beyond
    /// `refreshMargin` at `now`. Nil when only the engine can answer.
    func tokensWithoutRefresh(of id: String, now: Date, refreshMargin: Duration) -> TokenSet? {
        guard let stored = accounts.withLock({ $0[id] }) else { return nil }
        return Self.tokensWithoutRefresh(of: stored, now: now, refreshMargin: refreshMargin)
    }

    /// The account with `id` and its tokens as `tokensWithoutRefresh` gives them, from one
    /// lookup: for a token answered at once (issue 13: two lookups, each copying the stored
    /// account out, were a tenth of such a call's own work).
    func accountAndTokens(_ id: String, now: Date, refreshMargin: Duration) throws(SessionError)
        -> (account: Account, tokens: TokenSet?)
    {
        guard let stored = accounts.withLock({ $0[id] }) else { throw .noSuchAccount(id) }
        return (stored.account, Self.tokensWithoutRefresh(of: stored, now: now, refreshMargin: refreshMargin))
    }

    private static func tokensWithoutRefresh(of stored: StoredAccount, now: Date, refreshMargin: Duration)
        -> TokenSet?
    {
        guard stored.account.state == .active, let tokens = stored.tokens else { return nil }
        if let expiry = tokens.accessTokenExpiresAt, expiry.timeIntervalSince(now) <= refreshMargin.timeInterval {
            return nil
        }
        return tokens
    }
}

extension SessionEngine {
    /// The account's tokens when they can be handed out without a refresh, read without
    /// waiting for the engine (see `SessionReadView`); nil means ask `tokens(for:)`.
    public nonisolated func tokensWithoutWaiting(for id: String) -> TokenSet? {
        view.tokensWithoutRefresh(of: id, now: clock.now, refreshMargin: policy.refreshMargin)
    }

    /// The account with `id`, and its tokens as `tokensWithoutWaiting` gives them, read at once
    /// from the engine's view.
    public nonisolated func accountWithTokensWithoutWaiting(_ id: String) throws(SessionError)
        -> (account: Account, tokens: TokenSet?)
    {
        try view.accountAndTokens(id, now: clock.now, refreshMargin: policy.refreshMargin)
    }
}
