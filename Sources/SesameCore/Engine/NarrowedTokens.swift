import FoundationEssentials

/// The narrowed tokens the engine holds (in memory only: they are access tokens, each had again
/// by an exchange when it runs out) and the exchanges under way, one per account and narrowing.
struct NarrowedTokens {
    /// One account's token for one narrowing.
    struct Key: Hashable {
        var account: String
        var narrowing: TokenNarrowing
    }

    /// Narrowed tokens kept per account: a caller naming new audiences in a loop replaces the
    /// soonest to expire rather than grow this.
    static let perAccountLimit = 16

    /// An exchange under way, which every concurrent caller joins.
    struct Exchange {
        /// Tells this exchange from a later one for the same key.
        var id: UInt64
        var task: Task<TokenSet, any Error>
    }

    private var held: [Key: TokenSet] = [:]
    private(set) var inFlight: [Key: Exchange] = [:]
    private var lastExchangeID: UInt64 = 0

    /// A new exchange's id, for the task to name itself by when it finishes.
    mutating func nextExchangeID() -> UInt64 {
        lastExchangeID += 1
        return lastExchangeID
    }

    /// Records `task` as the exchange `id` for `key`.
    mutating func start(_ task: Task<TokenSet, any Error>, id: UInt64, for key: Key) {
        inFlight[key] = Exchange(id: id, task: task)
    }

    /// Ends the exchange `id` for `key`; false when it no longer counts (the account's grant
    /// changed after it began), so that what it brings is handed to no one.
    mutating func finish(_ id: UInt64, for key: Key) -> Bool {
        guard inFlight[key]?.id == id else { return false }
        inFlight[key] = nil
        return true
    }

    /// The token held for `key` if it is good for longer than `margin` after `now`.
    func usable(_ key: Key, now: Date, margin: Duration) -> TokenSet? {
        guard let tokens = held[key] else { return nil }
        guard let expiry = tokens.accessTokenExpiresAt else { return tokens }
        return expiry.timeIntervalSince(now) > margin.timeInterval ? tokens : nil
    }

    /// Keeps `tokens` for `key`, first dropping the account's expired ones and, at the limit,
    /// the one that expires soonest.
    mutating func keep(_ tokens: TokenSet, for key: Key, now: Date) {
        held = held.filter { entry in
            entry.key.account != key.account || !entry.value.accessTokenHasExpired(at: now)
        }
        let accountKeys = held.keys.filter { $0.account == key.account && $0 != key }
        if accountKeys.count >= Self.perAccountLimit,
            let soonest = accountKeys.min(by: { expiry(of: $0) < expiry(of: $1) })
        {
            held[soonest] = nil
        }
        held[key] = tokens
    }

    /// The tokens held for `account`, whatever their narrowing.
    func held(by account: String) -> [TokenSet] {
        held.filter { $0.key.account == account }.map(\.value)
    }

    /// Forgets the account's narrowed tokens and exchanges under way: its grant changed or ended.
    mutating func forget(account: String) {
        held = held.filter { $0.key.account != account }
        inFlight = inFlight.filter { $0.key.account != account }
    }

    private func expiry(of key: Key) -> Date {
        held[key]?.accessTokenExpiresAt ?? .distantFuture
    }
}
