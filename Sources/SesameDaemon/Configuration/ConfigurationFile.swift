import Logging
import SesameStore
import TOMLKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reads `sesamed.toml` onto a configuration. Every key is checked: an unknown key, a wrong type
/// or a bad value is a named error that points at the key, and nothing is applied.
public enum ConfigurationFile {
    /// Reads the file at `path` onto `base`; a missing file is an error only when `required`.
    public static func load(path: String, onto base: DaemonConfiguration, required: Bool) throws(ConfigurationError)
        -> DaemonConfiguration
    {
        guard let text = try readText(path, required: required) else { return base }
        return try parse(text, path: path, onto: base)
    }

    /// Parses TOML text onto `base`; `path` only names the source in errors.
    public static func parse(_ text: String, path: String, onto base: DaemonConfiguration) throws(ConfigurationError)
        -> DaemonConfiguration
    {
        let root = try table(text, path: path)
        var configuration = base
        let reader = Reader(path: path)
        for tableName in root.keys {
            if tableName == "grants" {
                configuration.accessPolicy.grants = try reader.grants(root[tableName])
                continue
            }
            guard let table = root[tableName]?.table else {
                throw reader.unknownOrScalar(tableName)
            }
            switch tableName {
            case "access": try readAccess(table, into: &configuration, reader, path: path)
            case "daemon": try readDaemon(table, into: &configuration, reader, path: path)
            case "limits": try readLimits(table, into: &configuration, reader, path: path)
            case "sessions": try readSessions(table, into: &configuration, reader, path: path)
            case "events": try readEvents(table, into: &configuration, reader, path: path)
            case "store": try readStore(table, into: &configuration, reader, path: path)
            default:
                throw .unknownKey(path: path, key: tableName)
            }
        }
        return configuration
    }

    /// The file's text; a missing file is an error.
    static func readText(_ path: String) throws(ConfigurationError) -> String {
        guard let text = try readText(path, required: true) else {
            throw .unreadable(path: path, reason: String(cString: strerror(ENOENT)))
        }
        return text
    }

    /// Parses TOML text into its root table, or a syntax error pointing at the line.
    static func table(_ text: String, path: String) throws(ConfigurationError) -> TOMLTable {
        try TOMLPrecheck.check(text, path: path)
        do {
            return try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw .syntax(
                path: path,
                line: error.source.begin.line,
                column: error.source.begin.column,
                message: error.description
            )
        } catch {
            throw .syntax(path: path, line: 0, column: 0, message: "\(error)")
        }
    }

    /// The file's text, or nil when it does not exist and is not required. Read with plain
    /// `read(2)` so that `/dev/null` and pipes work as well as regular files.
    private static func readText(_ path: String, required: Bool) throws(ConfigurationError) -> String? {
        let bytes: [UInt8]
        do {
            guard let contents = try FileReader.contents(of: path, limit: maximumSize) else {
                if required {
                    throw ConfigurationError.unreadable(path: path, reason: String(cString: strerror(ENOENT)))
                }
                return nil
            }
            bytes = contents
        } catch let error as ConfigurationError {
            throw error
        } catch FileReader.ReadError.system(_, let number) {
            throw .unreadable(path: path, reason: String(cString: strerror(number)))
        } catch {
            throw .unreadable(path: path, reason: "larger than \(maximumSize) bytes")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .unreadable(path: path, reason: "not valid UTF-8")
        }
        return text
    }

    /// No sensible config file comes near this; a bigger one is a mistake, not a config.
    private static let maximumSize = 1 << 20
}

/// Type and range checks for single values, each naming the key in its error; provider files
/// use them too.
struct Reader {
    let path: String

    func unknownOrScalar(_ key: String) -> ConfigurationError {
        ["daemon", "limits", "sessions", "events", "store", "access"].contains(key)
            ? .wrongType(path: path, key: key, expected: "a table ([\(key)])")
            : .unknownKey(path: path, key: key)
    }

    func read(
        _ table: TOMLTable,
        prefix: String,
        _ apply: (String, any TOMLValueConvertible) throws(ConfigurationError) -> Bool
    ) throws(ConfigurationError) {
        for key in table.keys {
            guard let value = table[key], try apply(key, value) else {
                throw .unknownKey(path: path, key: "\(prefix).\(key)")
            }
        }
    }

    func absolutePath(_ value: any TOMLValueConvertible, key: String) throws(ConfigurationError) -> String {
        guard let text = value.string else { throw .wrongType(path: path, key: key, expected: "a string") }
        guard text.hasPrefix("/") else { throw .invalidValue(path: path, key: key, reason: "must be an absolute path") }
        return text
    }

    func fileMode(_ value: any TOMLValueConvertible, key: String) throws(ConfigurationError) -> UInt32 {
        guard let mode = value.int else {
            throw .wrongType(path: path, key: key, expected: "an integer such as 0o666")
        }
        guard (0...0o777).contains(mode) else {
            throw .invalidValue(path: path, key: key, reason: "must be a file mode between 0o000 and 0o777")
        }
        return UInt32(mode)
    }

    func integer(_ value: any TOMLValueConvertible, key: String, in range: ClosedRange<Int>) throws(ConfigurationError)
        -> Int
    {
        guard let number = value.int else { throw .wrongType(path: path, key: key, expected: "an integer") }
        guard range.contains(number) else {
            throw .invalidValue(
                path: path,
                key: key,
                reason: "must be between \(range.lowerBound) and \(range.upperBound)"
            )
        }
        return number
    }

    func bool(_ value: any TOMLValueConvertible, key: String) throws(ConfigurationError) -> Bool {
        guard let flag = value.bool else { throw .wrongType(path: path, key: key, expected: "true or false") }
        return flag
    }

    /// A gid given as a number or a group name.
    func groupID(_ value: any TOMLValueConvertible, key: String) throws(ConfigurationError) -> UInt32 {
        try identifier(value, key: key, kind: "group", lookup: UserDatabase.gid(named:))
    }

    /// A uid given as a number or a user name.
    func userID(_ value: any TOMLValueConvertible, key: String) throws(ConfigurationError) -> UInt32 {
        try identifier(value, key: key, kind: "user", lookup: UserDatabase.uid(named:))
    }

    private func identifier(
        _ value: any TOMLValueConvertible,
        key: String,
        kind: String,
        lookup: (String) -> UInt32?
    ) throws(ConfigurationError) -> UInt32 {
        let short = kind == "user" ? "uid" : "gid"
        if let number = value.int {
            guard (0...Int(UInt32.max - 1)).contains(number) else {
                throw .invalidValue(path: path, key: key, reason: "is not a valid \(short)")
            }
            return UInt32(number)
        }
        guard let name = value.string else {
            throw .wrongType(path: path, key: key, expected: "a \(kind) name or \(short)")
        }
        guard let id = lookup(name) else {
            throw .invalidValue(path: path, key: key, reason: "names \(kind) '\(name)', which does not exist")
        }
        return id
    }

    /// The `[[grants]]` array: each entry names exactly one of `user`/`group`, exactly one of
    /// `account`/`provider`, `allow` (a list of "observe" and "use") and optionally the `owner`
    /// whose accounts it covers.
    func grants(_ value: (any TOMLValueConvertible)?) throws(ConfigurationError) -> [Grant] {
        guard let array = value?.array else {
            throw .wrongType(path: path, key: "grants", expected: "an array of tables ([[grants]])")
        }
        var grants: [Grant] = []
        for (index, element) in array.enumerated() {
            let prefix = "grants[\(index)]"
            guard let table = element.table else {
                throw .wrongType(path: path, key: prefix, expected: "a table ([[grants]])")
            }
            grants.append(try grant(table, prefix: prefix))
        }
        return grants
    }

    /// One `[[grants]]` entry, `prefix` naming it in errors.
    private func grant(_ table: TOMLTable, prefix: String) throws(ConfigurationError) -> Grant {
        var principal: Principal?
        var target: GrantTarget?
        var rights: AccountRights?
        var owner: UInt32?
        func once<T>(_ slot: T?, _ what: String) throws(ConfigurationError) {
            guard slot == nil else {
                throw .invalidValue(path: path, key: prefix, reason: "names more than one \(what)")
            }
        }
        try read(table, prefix: prefix) { key, value throws(ConfigurationError) in
            switch key {
            case "user":
                try once(principal, "user or group")
                principal = .user(try userID(value, key: "\(prefix).user"))
            case "group":
                try once(principal, "user or group")
                principal = .group(try groupID(value, key: "\(prefix).group"))
            case "account", "provider":
                try once(target, "account or provider")
                guard let name = value.string, !name.isEmpty else {
                    throw .wrongType(path: path, key: "\(prefix).\(key)", expected: "a non-empty string")
                }
                target = key == "account" ? .account(name) : .provider(name)
            case "allow":
                rights = try allowed(value, key: "\(prefix).allow")
            case "owner":
                owner = try userID(value, key: "\(prefix).owner")
            default:
                return false
            }
            return true
        }
        guard let principal else {
            throw .invalidValue(path: path, key: prefix, reason: "needs a user or a group")
        }
        guard let target else {
            throw .invalidValue(path: path, key: prefix, reason: "needs an account or a provider")
        }
        guard let rights else {
            throw .invalidValue(path: path, key: prefix, reason: "needs allow = [\"observe\"] or [\"use\"]")
        }
        return Grant(principal: principal, target: target, rights: rights, owner: owner)
    }

    private func allowed(_ value: any TOMLValueConvertible, key: String) throws(ConfigurationError) -> AccountRights {
        guard let names = value.array, !names.isEmpty else {
            throw .wrongType(path: path, key: key, expected: "a non-empty list of \"observe\" and \"use\"")
        }
        var rights: AccountRights = []
        for name in names {
            switch name.string {
            case "observe": rights.insert(.observe)
            case "use": rights.insert(.use)
            default:
                throw .invalidValue(path: path, key: key, reason: "may hold only \"observe\" and \"use\"")
            }
        }
        return rights
    }

    func logLevel(_ value: any TOMLValueConvertible, key: String) throws(ConfigurationError) -> Logger.Level {
        guard let text = value.string else { throw .wrongType(path: path, key: key, expected: "a string") }
        guard let level = Logger.Level(rawValue: text) else {
            let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalidValue(path: path, key: key, reason: "must be one of \(names)")
        }
        return level
    }
}
