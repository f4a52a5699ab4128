import SesameProtocol
import SesameVarlink
import SesameWire

/// How much one uid may hold at once, so that no user can starve the others.
public struct UserLimits: Sendable, Hashable {
    /// Open connections per uid.
    public var connections: Int
    /// Live event subscriptions per uid.
    public var subscriptions: Int
    /// Logins started and not yet finished per uid.
    public var logins: Int
    /// Accounts one uid may own (logged-out ones count until removed).
    public var accounts: Int
    /// Open connections of all uids together (each costs a descriptor and some memory), never
    /// more than the descriptor limit leaves room for.
    public var totalConnections: Int
    /// Calls that reach a provider one uid may make in a minute (`MinuteAllowance`).
    public var providerCallsPerMinute: Int
    /// Changes written to the store that no other limit pays for (renames) one uid may make in
    /// a minute: each is a durable write.
    public var changesPerMinute: Int

    /// Creates limits.
    public init(
        connections: Int = 128,
        subscriptions: Int = 64,
        logins: Int = 8,
        accounts: Int = 32,
        totalConnections: Int = 4096,
        providerCallsPerMinute: Int = 30,
        changesPerMinute: Int = 60
    ) {
        self.connections = connections
        self.subscriptions = subscriptions
        self.logins = logins
        self.accounts = accounts
        self.totalConnections = totalConnections
        self.providerCallsPerMinute = providerCallsPerMinute
        self.changesPerMinute = changesPerMinute
    }

    /// Descriptors kept free below the process's limit: for the store, providers' HTTP
    /// connections, the journal, and root's connections beyond the total.
    public static let descriptorHeadroom = 256
    /// Connections root may open beyond the total, so that an administrator is still served
    /// while other users hold every connection.
    public static let rootReserve = 32

    /// The total in force for a process allowed `descriptorLimit` open files: the configured
    /// one, never closer to the limit than the headroom, so accepting never runs out of
    /// descriptors (an accept loop at EMFILE spins).
    public func totalConnections(descriptorLimit: Int) -> Int {
        min(totalConnections, max(1, descriptorLimit - Self.descriptorHeadroom))
    }
}

/// A per-uid resource with a limit.
enum LimitedResource: Sendable, Hashable {
    case connection, subscription, login

    func limit(in limits: UserLimits) -> Int {
        switch self {
        case .connection: limits.connections
        case .subscription: limits.subscriptions
        case .login: limits.logins
        }
    }

    /// The named error a caller over the limit gets.
    func error(limit: Int) -> VarlinkError {
        switch self {
        case .connection: VarlinkError(.tooManyConnections(limit: limit))
        case .subscription: VarlinkError(.tooManySubscriptions(limit: limit))
        case .login: VarlinkError(.tooManyLogins(limit: limit))
        }
    }
}
