/// Why a config file was refused. The daemon does not start on a bad file rather than guess.
public enum ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// The file is not valid TOML.
    case syntax(path: String, line: Int, column: Int, message: String)
    /// A table or key that sesamed does not know, most likely a typo.
    case unknownKey(path: String, key: String)
    /// A key holds a value of the wrong TOML type.
    case wrongType(path: String, key: String, expected: String)
    /// A key's value has the right type but is not acceptable.
    case invalidValue(path: String, key: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read config file \(path): \(reason)"
        case .syntax(let path, let line, let column, let message):
            "\(path):\(line):\(column): invalid TOML: \(message)"
        case .unknownKey(let path, let key):
            "\(path): unknown setting '\(key)'"
        case .wrongType(let path, let key, let expected):
            "\(path): '\(key)' must be \(expected)"
        case .invalidValue(let path, let key, let reason):
            "\(path): '\(key)' \(reason)"
        }
    }

    /// The key the error is about, when it is about one.
    public var key: String? {
        switch self {
        case .unreadable, .syntax: nil
        case .unknownKey(_, let key), .wrongType(_, let key, _), .invalidValue(_, let key, _): key
        }
    }
}
