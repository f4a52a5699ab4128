import FoundationEssentials
import Logging
import SesameProtocol
import SesameStore
import SesameWire

/// Everything sesamed needs to know to start; built-in defaults, then the config file, then flags.
public struct DaemonConfiguration: Sendable, Equatable {
    /// Path of the Varlink socket to bind when not socket-activated.
    public var socketPath: String
    /// File mode of a bound socket. 0o666 by default: every call is checked against the caller's
    /// uid, as systemd's own Varlink services do.
    public var socketMode: UInt32
    /// Where the token store and other state live.
    public var stateDirectory: String
    /// The largest Varlink message accepted, in bytes.
    public var maximumMessageSize: Int
    /// How long a connection may hold part of a message without completing one.
    public var unfinishedMessageTimeout: Duration = .seconds(30)
    /// The least severe log level written.
    public var logLevel: Logger.Level
    /// How long before an access token expires `expiring` is announced.
    public var expiringMargin: Duration
    /// `GetToken` refreshes a token that expires within this long rather than hand it out.
    public var refreshMargin: Duration
    /// Whether tokens are refreshed ahead of expiry without anyone asking.
    public var refreshAhead: Bool
    /// How long before a refresh token that was not renewed expires `refreshTokenExpiring` is
    /// announced (`[sessions] refresh_token_warning`).
    public var refreshTokenWarning: Duration = .seconds(7 * 86400)
    /// How many undelivered events one subscriber may have before it is cut off with `Lagged`.
    public var subscriberQueueLimit: Int
    /// How many recent events are kept for subscribers that resume with `since`.
    public var eventHistoryLimit: Int
    /// A key file for the token store, used when no systemd credential is passed.
    public var storeKeyFile: String?
    /// Whether a development key may be generated in the state directory when no key is configured.
    public var allowGeneratedKey: Bool
    /// What to do with a damaged token store.
    public var onDamagedStore: EncryptedStore.DamagePolicy
    /// Where the store's sequence mark is kept (nil: beside the store), which reveals a store
    /// replaced by an older copy.
    public var storeSequenceFile: String?
    /// Where `providers.d/*.toml` are read from.
    public var providersDirectory: String
    /// How long stopping may take: calls being answered get this long to finish, then whatever
    /// is still open is closed and the daemon exits.
    public var shutdownTimeout: Duration
    /// Who besides owners and root may see and use which accounts; reloaded on SIGHUP.
    public var accessPolicy = AccessPolicy()
    /// What one uid may hold at once; reloaded on SIGHUP.
    public var userLimits = UserLimits()

    /// Creates a configuration from its parts.
    public init(
        socketPath: String,
        socketMode: UInt32 = 0o666,
        stateDirectory: String,
        maximumMessageSize: Int = 1 << 20,
        logLevel: Logger.Level = .info,
        expiringMargin: Duration = .seconds(60),
        refreshMargin: Duration = .seconds(30),
        refreshAhead: Bool = true,
        subscriberQueueLimit: Int = 1024,
        eventHistoryLimit: Int = 4096,
        storeKeyFile: String? = nil,
        allowGeneratedKey: Bool = true,
        onDamagedStore: EncryptedStore.DamagePolicy = .refuse,
        storeSequenceFile: String? = nil,
        providersDirectory: String = "/etc/sesame/providers.d",
        shutdownTimeout: Duration = .seconds(5)
    ) {
        self.socketPath = socketPath
        self.socketMode = socketMode
        self.stateDirectory = stateDirectory
        self.maximumMessageSize = maximumMessageSize
        self.logLevel = logLevel
        self.expiringMargin = expiringMargin
        self.refreshMargin = refreshMargin
        self.refreshAhead = refreshAhead
        self.subscriberQueueLimit = subscriberQueueLimit
        self.eventHistoryLimit = eventHistoryLimit
        self.storeKeyFile = storeKeyFile
        self.allowGeneratedKey = allowGeneratedKey
        self.onDamagedStore = onDamagedStore
        self.storeSequenceFile = storeSequenceFile
        self.providersDirectory = providersDirectory
        self.shutdownTimeout = shutdownTimeout
    }

    /// The built-in defaults: system paths for root, the XDG directories for anyone else, and the
    /// directories systemd made for the unit (`$RUNTIME_DIRECTORY`, `$STATE_DIRECTORY`) above both.
    public static func defaults(environment: [String: String], uid: UInt32) -> DaemonConfiguration {
        let runtime: String
        let state: String
        if uid == 0 {
            runtime = SocketPaths.systemRuntimeDirectory
            state = "/var/lib/sesame"
        } else {
            let home = environment["HOME"] ?? "/"
            runtime = SocketPaths.userRuntimeDirectory(
                xdgRuntimeDirectory: environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(uid)"
            )
            state = (environment["XDG_STATE_HOME"] ?? home + "/.local/state") + "/sesame"
        }
        let configFile = defaultFilePath(environment: environment, uid: uid)
        let configDirectory = configFile[..<(configFile.lastIndex(of: "/") ?? configFile.startIndex)]
        return DaemonConfiguration(
            socketPath: (firstPath(environment["RUNTIME_DIRECTORY"]) ?? runtime) + "/" + SocketPaths.socketName,
            stateDirectory: firstPath(environment["STATE_DIRECTORY"]) ?? state,
            providersDirectory: configDirectory + "/providers.d"
        )
    }

    /// The config file read when none is named: `/etc/sesame/sesamed.toml` for root, the XDG
    /// config directory for anyone else.
    public static func defaultFilePath(environment: [String: String], uid: UInt32) -> String {
        if uid == 0 { return "/etc/sesame/sesamed.toml" }
        let home = environment["HOME"] ?? "/"
        return (environment["XDG_CONFIG_HOME"] ?? home + "/.config") + "/sesame/sesamed.toml"
    }

    /// systemd passes several directories separated by colons; the first is the unit's own.
    private static func firstPath(_ value: String?) -> String? {
        guard let first = value?.split(separator: ":").first, !first.isEmpty else { return nil }
        return String(first)
    }
}
