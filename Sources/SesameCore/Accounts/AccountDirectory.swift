/// The single source of truth for every account and for the event sequence number.
///
/// Accounts enter it through logins and imports, which later issues add; until then it serves
/// what it holds, which on a fresh state directory is nothing.
public actor AccountDirectory {
    private var accounts: [String: Account]
    private var lastSequence: UInt64

    /// Creates a directory holding `accounts`, whose last announced event had `lastSequence`.
    public init(accounts: [Account] = [], lastSequence: UInt64 = 0) {
        self.accounts = Dictionary(accounts.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        self.lastSequence = lastSequence
    }

    /// Every account, ordered by id so listings are stable.
    public func list() -> [Account] {
        accounts.values.sorted { $0.id < $1.id }
    }

    /// The sequence number of the last event announced; a subscriber starts after it.
    public var currentSequence: UInt64 { lastSequence }

    /// How many accounts are in each state, for status lines.
    public func countsByState() -> [SessionState: Int] {
        accounts.values.reduce(into: [:]) { counts, account in counts[account.state, default: 0] += 1 }
    }
}
