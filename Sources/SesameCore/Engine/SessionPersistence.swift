import FoundationEssentials
import Synchronization

/// Everything the engine must get back after a restart: the accounts with their tokens, and the
/// last event sequence number, so numbers keep growing.
public struct SessionSnapshot: Sendable, Codable, Hashable {
    /// Every account with its tokens.
    public var accounts: [StoredAccount]
    /// The sequence number of the last event announced.
    public var lastSequence: UInt64

    /// Creates a snapshot.
    public init(accounts: [StoredAccount] = [], lastSequence: UInt64 = 0) {
        self.accounts = accounts
        self.lastSequence = lastSequence
    }
}

/// One account as persisted: the public record, its tokens, and timer bookkeeping.
public struct StoredAccount: Sendable, Codable, Hashable {
    /// The account's public record.
    public var account: Account
    /// Its tokens; nil once logged out.
    public var tokens: TokenSet?
    /// Whether `expiring` was already announced for the current access token.
    public var expiringAnnounced: Bool
    /// When the next refresh ahead of expiry is due; nil when none is planned.
    public var refreshAt: Date?
    /// The refresh-token expiry that `refreshTokenExpiring` was announced for, so that it goes out
    /// once per refresh token (a renewed one has another expiry). Absent in older stores.
    public var refreshTokenWarnedFor: Date?
    /// Grants a new login of the same person replaced that the provider has not yet confirmed
    /// revoked: kept, and tried again, until it does or they lapse. Absent in older stores.
    public var replacedGrants: [TokenSet]?
    /// The account's latest events, oldest first, at most `AccountHistory.limit`: what a
    /// subscriber that resumes after a restart is replayed. Absent in older stores.
    public var history: [AuthEvent]?

    /// Creates a stored account.
    public init(account: Account, tokens: TokenSet?, expiringAnnounced: Bool = false, refreshAt: Date? = nil) {
        self.account = account
        self.tokens = tokens
        self.expiringAnnounced = expiringAnnounced
        self.refreshAt = refreshAt
    }
}

/// Where the engine durably records its state. `save` returns only once the snapshot would
/// survive a crash; the engine announces a change only after that, and a failing save leaves
/// the change undone.
public protocol SessionPersistence: Sendable {
    /// Durably replaces the stored state with `snapshot`.
    func save(_ snapshot: SessionSnapshot) throws

    /// Durably replaces the stored state with `snapshot`, which differs from the snapshot this
    /// persistence saved last only in `changes` (by account id; nil: removed), so that a store
    /// that writes changes need not compare every account. By default, `save(snapshot)`.
    func save(_ snapshot: SessionSnapshot, changes: [String: StoredAccount?]) throws
}

extension SessionPersistence {
    /// Saves the whole snapshot.
    public func save(_ snapshot: SessionSnapshot, changes: [String: StoredAccount?]) throws {
        try save(snapshot)
    }
}

/// Keeps the snapshot in memory only: state is lost when the process ends. For tests, and for a
/// daemon started without a store.
public final class MemorySessionPersistence: SessionPersistence {
    private let stored: Mutex<SessionSnapshot>

    /// Creates an empty in-memory persistence.
    public init(_ snapshot: SessionSnapshot = SessionSnapshot()) {
        stored = Mutex(snapshot)
    }

    /// The last snapshot saved.
    public var snapshot: SessionSnapshot { stored.withLock { $0 } }

    public func save(_ snapshot: SessionSnapshot) throws {
        stored.withLock { $0 = snapshot }
    }
}

extension [String: StoredAccount?] {
    /// These changes, with each of `unsaved` not among them as it is in `accounts` (nil: gone).
    func merging(unsaved: Set<String>, from accounts: [String: StoredAccount]) -> [String: StoredAccount?] {
        var merged = self
        for id in unsaved where merged.index(forKey: id) == nil {
            merged.updateValue(accounts[id], forKey: id)
        }
        return merged
    }
}
