import Foundation
import TOMLKit

/// Which account a credential helper (git's, docker's) uses for which server: the `[hosts]`
/// table of `$XDG_CONFIG_HOME/sesame/credentials.toml` (`~/.config/sesame/credentials.toml`
/// by default), URL prefix to account, shared by every helper:
///
///     [hosts]
///     "https://github.com" = "work"
///     "https://gitlab.example.com/team" = "team"
///
/// The longest prefix that matches wins. A prefix matches a URL only up to a boundary (the end,
/// `/`, `?` or `#`), so `https://github.com` never matches `https://github.com.example.net`:
/// a token must not go to a server its owner did not name.
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
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        return base + "/sesame/credentials.toml"
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

    /// The account for `url`: the one of the longest prefix that matches it, if any.
    public func account(for url: String) -> String? {
        hosts.filter { Self.prefix($0.key, matches: url) }.max { $0.key.count < $1.key.count }?.value
    }

    private static func prefix(_ prefix: String, matches url: String) -> Bool {
        let prefix = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        guard !prefix.isEmpty, url.hasPrefix(prefix) else { return false }
        let rest = url.dropFirst(prefix.count)
        return rest.isEmpty || ["/", "?", "#"].contains(rest.first)
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

    public var description: String {
        switch self {
        case .noAccount(let url, let mapPath):
            "no account is named for \(url): give --account NAME to the helper, or map the URL in \(mapPath) "
                + "([hosts] \"\(url)\" = \"NAME\")"
        case .badMapFile(let path, let reason): "\(path) cannot be used: \(reason)"
        case .plainHTTP(let url): "no token is sent to \(url) over plain http, where anyone on the way could read it"
        }
    }
}
