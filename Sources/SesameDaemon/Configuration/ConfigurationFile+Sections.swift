import Logging
import SesameStore
import TOMLKit

/// The tables of the config file, one reader each.
extension ConfigurationFile {
    /// `[access]`.
    static func readAccess(
        _ table: TOMLTable,
        into configuration: inout DaemonConfiguration,
        _ reader: Reader,
        path: String
    ) throws(ConfigurationError) {
        let tableName = "access"
        try reader.read(table, prefix: tableName) { key, value throws(ConfigurationError) in
            guard key == "admin_group" else { return false }
            configuration.accessPolicy.adminGroup = try reader.groupID(value, key: "access.admin_group")
            return true
        }
    }

    /// `[daemon]`.
    static func readDaemon(
        _ table: TOMLTable,
        into configuration: inout DaemonConfiguration,
        _ reader: Reader,
        path: String
    ) throws(ConfigurationError) {
        let tableName = "daemon"
        try reader.read(table, prefix: tableName) { key, value throws(ConfigurationError) in
            switch key {
            case "socket": configuration.socketPath = try reader.absolutePath(value, key: "daemon.socket")
            case "socket_mode": configuration.socketMode = try reader.fileMode(value, key: "daemon.socket_mode")
            case "state_directory":
                configuration.stateDirectory = try reader.absolutePath(value, key: "daemon.state_directory")
            case "log_level": configuration.logLevel = try reader.logLevel(value, key: "daemon.log_level")
            case "providers_directory":
                configuration.providersDirectory = try reader.absolutePath(
                    value,
                    key: "daemon.providers_directory"
                )
            case "shutdown_timeout":
                let seconds = try reader.integer(value, key: "daemon.shutdown_timeout", in: 0...300)
                configuration.shutdownTimeout = .seconds(seconds)
            default: return false
            }
            return true
        }
    }

    /// The counts under `[limits]`: where each goes, and the values it may take.
    private static let limitCounts: [String: (WritableKeyPath<DaemonConfiguration, Int> & Sendable, ClosedRange<Int>)] =
        [
            "max_message_size": (\.maximumMessageSize, 1024...(64 << 20)),
            "connections_per_user": (\.userLimits.connections, 1...65536),
            "subscriptions_per_user": (\.userLimits.subscriptions, 1...65536),
            "logins_per_user": (\.userLimits.logins, 1...1024),
            "connections_total": (\.userLimits.totalConnections, 1...1_048_576),
            "accounts_per_user": (\.userLimits.accounts, 1...65536),
            "provider_calls_per_minute": (\.userLimits.providerCallsPerMinute, 1...100_000),
            "changes_per_minute": (\.userLimits.changesPerMinute, 1...100_000),
        ]

    /// `[limits]`.
    static func readLimits(
        _ table: TOMLTable,
        into configuration: inout DaemonConfiguration,
        _ reader: Reader,
        path: String
    ) throws(ConfigurationError) {
        try reader.read(table, prefix: "limits") { key, value throws(ConfigurationError) in
            if key == "unfinished_message_timeout" {
                configuration.unfinishedMessageTimeout = .seconds(
                    try reader.integer(value, key: "limits.unfinished_message_timeout", in: 1...3600)
                )
                return true
            }
            guard let (field, range) = limitCounts[key] else { return false }
            configuration[keyPath: field] = try reader.integer(value, key: "limits.\(key)", in: range)
            return true
        }
    }

    /// `[sessions]`.
    static func readSessions(
        _ table: TOMLTable,
        into configuration: inout DaemonConfiguration,
        _ reader: Reader,
        path: String
    ) throws(ConfigurationError) {
        let tableName = "sessions"
        try reader.read(table, prefix: tableName) { key, value throws(ConfigurationError) in
            switch key {
            case "expiring_margin":
                let seconds = try reader.integer(value, key: "sessions.expiring_margin", in: 0...86400)
                configuration.expiringMargin = .seconds(seconds)
            case "refresh_margin":
                let seconds = try reader.integer(value, key: "sessions.refresh_margin", in: 0...3600)
                configuration.refreshMargin = .seconds(seconds)
            case "refresh_ahead":
                configuration.refreshAhead = try reader.bool(value, key: "sessions.refresh_ahead")
            case "refresh_token_warning":
                let seconds = try reader.integer(value, key: "sessions.refresh_token_warning", in: 0...(90 * 86400))
                configuration.refreshTokenWarning = .seconds(seconds)
            default: return false
            }
            return true
        }
    }

    /// `[events]`.
    static func readEvents(
        _ table: TOMLTable,
        into configuration: inout DaemonConfiguration,
        _ reader: Reader,
        path: String
    ) throws(ConfigurationError) {
        let tableName = "events"
        try reader.read(table, prefix: tableName) { key, value throws(ConfigurationError) in
            switch key {
            case "queue_limit":
                configuration.subscriberQueueLimit = try reader.integer(
                    value,
                    key: "events.queue_limit",
                    in: 1...65536
                )
            case "history_limit":
                configuration.eventHistoryLimit = try reader.integer(
                    value,
                    key: "events.history_limit",
                    in: 0...1_000_000
                )
            default: return false
            }
            return true
        }
    }

    /// `[store]`.
    static func readStore(
        _ table: TOMLTable,
        into configuration: inout DaemonConfiguration,
        _ reader: Reader,
        path: String
    ) throws(ConfigurationError) {
        let tableName = "store"
        try reader.read(table, prefix: tableName) { key, value throws(ConfigurationError) in
            switch key {
            case "key_file": configuration.storeKeyFile = try reader.absolutePath(value, key: "store.key_file")
            case "sequence_file":
                configuration.storeSequenceFile = try reader.absolutePath(value, key: "store.sequence_file")
            case "allow_generated_key":
                configuration.allowGeneratedKey = try reader.bool(value, key: "store.allow_generated_key")
            case "on_damage":
                let names = EncryptedStore.DamagePolicy.allCases.map(\.rawValue)
                guard let text = value.string else {
                    throw .wrongType(path: path, key: "store.on_damage", expected: "a string")
                }
                guard let policy = EncryptedStore.DamagePolicy(rawValue: text) else {
                    throw .invalidValue(
                        path: path,
                        key: "store.on_damage",
                        reason: "must be one of \(names.joined(separator: ", "))"
                    )
                }
                configuration.onDamagedStore = policy
            default: return false
            }
            return true
        }
    }
}
