import FoundationEssentials
import TOMLKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Which account a credential helper (git's, docker's) uses for which server: the `[hosts]`
/// table of `$XDG_CONFIG_HOME/sesame/credentials.toml` (`~/.config/sesame/credentials.toml`
/// by default), URL prefix to account, shared by every helper:
///
///     [hosts]
///     "https://github.com" = "work"
///     "https://gitlab.example.com/team" = "team"
///
/// The most specific entry that covers the URL wins. Entries and URLs are compared as
/// `CredentialURL`s: the same scheme and host, and whole path segments after decoding and dot
/// segment removal, so `https://github.com` never covers `https://github.com.example.net` and
/// `https://host/team` never covers `https://host/team/../other`: a token must not go to a
/// server or repository its owner did not name.
public struct CredentialHosts: Sendable, Equatable {
    /// The prefixes and their accounts, as the file gave them.
    public var hosts: [String: String]

    /// Creates a map from prefixes to accounts.
    public init(hosts: [String: String] = [:]) {
        self.hosts = hosts
    }

    /// The file's path, as `environment` places it.
    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? accountHome()) + "/.config"
        return base + "/sesame/credentials.toml"
    }

    /// The caller's home directory from the password database, for a caller without `$HOME`
    /// (git and docker pass their environment on, but a service may have none); the root
    /// directory, where only root could have put a map, when the database has no entry.
    static func accountHome() -> String {
        guard let entry = getpwuid(getuid()), let home = entry.pointee.pw_dir else { return "" }
        return String(cString: home)
    }

    /// The map in the file at `path`; empty when there is no file.
    public static func load(from path: String) throws(CredentialHelperError) -> CredentialHosts {
        guard let data = FileManager.default.contents(atPath: path) else { return CredentialHosts() }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: String(decoding: data, as: UTF8.self))
        } catch {
            throw .badMapFile(path: path, reason: "it is not TOML (\(error))")
        }
        guard let hosts = table["hosts"] else { return CredentialHosts() }
        guard let hostTable = hosts.table else { throw .badMapFile(path: path, reason: "[hosts] is not a table") }
        var map: [String: String] = [:]
        for key in hostTable.keys {
            guard let account = hostTable[key]?.string else {
                throw .badMapFile(path: path, reason: "hosts.\"\(key)\" is not an account name")
            }
            map[key] = account
        }
        return CredentialHosts(hosts: map)
    }

    /// The account for `url`: the one of the entry that covers it with the longest path, if
    /// any. An entry that is not a URL covers nothing.
    public func account(for url: CredentialURL) -> String? {
        let covering = hosts.compactMap { key, account in
            CredentialURL(key).flatMap { $0.covers(url) ? ($0.segments.count, account) : nil }
        }
        return covering.max { $0.0 < $1.0 }?.1
    }
}

extension CredentialURL {
    /// `url` read, and fit to be sent a token (`refusal`); the error says why not.
    public static func checked(_ url: String) throws(CredentialHelperError) -> CredentialURL {
        try checked(CredentialURL(url), shown: url)
    }

    /// `url`, read already, fit to be sent a token; `shown` names it in the error.
    public static func checked(_ url: CredentialURL?, shown: String) throws(CredentialHelperError) -> CredentialURL {
        guard let url else { throw .ambiguousURL(url: shown) }
        if let refusal = url.refusal { throw refusal }
        return url
    }
}

/// Why a credential helper gave no credential; each says what to do.
public enum CredentialHelperError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Neither the helper's options nor the map name an account for the server.
    case noAccount(url: String, mapPath: String)
    /// The map file does not read.
    case badMapFile(path: String, reason: String)
    /// The server is reached over plain http, where anyone on the way could read the token.
    case plainHTTP(url: String)
    /// The server is reached by a scheme other than https or http.
    case unsupportedScheme(url: String)
    /// The URL does not read, or its path hides a `/` or a dot segment in percent-encoding.
    case ambiguousURL(url: String)

    public var description: String {
        switch self {
        case .noAccount(let url, let mapPath):
            "no account is named for \(url): give --account NAME to the helper, or map the URL in \(mapPath) "
                + "([hosts] \"\(url)\" = \"NAME\")"
        case .badMapFile(let path, let reason): "\(path) cannot be used: \(reason)"
        case .plainHTTP(let url): "no token is sent to \(url) over plain http, where anyone on the way could read it"
        case .unsupportedScheme(let url): "no token is sent to \(url): only https, or http to this machine, carries one"
        case .ambiguousURL(let url):
            "no token is sent to \(url): it is not a URL, or its path hides a '/' or a dot segment in "
                + "percent-encoding, so the server may read it as another path than the one mapped"
        }
    }
}
