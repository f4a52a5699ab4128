import Foundation
import SesameProviders
import TOMLKit

/// Reads `providers.d/*.toml`: one OAuth / OpenID Connect provider per file. Every key is checked
/// like the main config file; a bad file stops start-up with a message naming file and key.
enum ProviderFiles {
    /// Every provider in `directory`, ordered by file name; an absent directory means none.
    static func load(directory: String, credentialsDirectory: String?) throws(ConfigurationError)
        -> [ProviderConfiguration]
    {
        guard FileManager.default.fileExists(atPath: directory) else { return [] }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            // Unreadable is not empty: a reload must not drop every provider over it.
            throw .invalidValue(path: directory, key: "providers_directory", reason: "cannot be read")
        }
        var providers: [ProviderConfiguration] = []
        for name in names.sorted() where name.hasSuffix(".toml") {
            let path = directory + "/" + name
            let provider = try parse(
                try ConfigurationFile.readText(path),
                path: path,
                defaultName: String(name.dropLast(5)),
                credentialsDirectory: credentialsDirectory
            )
            guard !providers.contains(where: { $0.name == provider.name }) else {
                throw .invalidValue(path: path, key: "name", reason: "'\(provider.name)' is configured twice")
            }
            providers.append(provider)
        }
        return providers
    }

    static func parse(_ text: String, path: String, defaultName: String, credentialsDirectory: String?)
        throws(ConfigurationError) -> ProviderConfiguration
    {
        let table = try ConfigurationFile.table(text, path: path)
        func string(_ key: String) throws(ConfigurationError) -> String? {
            guard let value = table[key] else { return nil }
            guard let text = value.string else { throw .wrongType(path: path, key: key, expected: "a string") }
            return text
        }
        let known: Set<String> = [
            "name", "issuer", "discovery", "client_id", "client_secret_file", "client_secret_credential", "scopes",
            "flow", "ca_file", "timeout", "token_timeout", "endpoints",
        ]
        for key in table.keys where !known.contains(key) { throw .unknownKey(path: path, key: key) }

        let name = try string("name") ?? defaultName
        guard !name.isEmpty, name.allSatisfy({ $0.isLowercase || $0.isNumber || "-_.".contains($0) }) else {
            throw .invalidValue(path: path, key: "name", reason: "must be lower-case letters, digits, '-', '_' or '.'")
        }
        guard let clientID = try string("client_id") else {
            throw .invalidValue(path: path, key: "client_id", reason: "is required")
        }
        var endpoints = OAuthEndpoints()
        if let value = table["endpoints"] {
            guard let sub = value.table else { throw .wrongType(path: path, key: "endpoints", expected: "a table") }
            let names = ["token", "device_authorization", "authorization", "revocation", "jwks", "userinfo"]
            for key in sub.keys where !names.contains(key) { throw .unknownKey(path: path, key: "endpoints.\(key)") }
            func endpoint(_ key: String) throws(ConfigurationError) -> String? {
                guard let value = sub[key] else { return nil }
                guard let text = value.string else {
                    throw .wrongType(path: path, key: "endpoints.\(key)", expected: "a URL")
                }
                try checkURL(text, path: path, key: "endpoints.\(key)")
                return text
            }
            endpoints = OAuthEndpoints(
                tokenEndpoint: try endpoint("token"),
                deviceAuthorizationEndpoint: try endpoint("device_authorization"),
                authorizationEndpoint: try endpoint("authorization"),
                revocationEndpoint: try endpoint("revocation"),
                jwksURI: try endpoint("jwks"),
                userinfoEndpoint: try endpoint("userinfo")
            )
        }
        let issuer = try string("issuer")
        if let issuer { try checkURL(issuer, path: path, key: "issuer") }
        let reader = Reader(path: path)
        let discovery =
            try table["discovery"].map { value throws(ConfigurationError) in
                try reader.bool(value, key: "discovery")
            } ?? true
        guard (issuer != nil && discovery) || endpoints.tokenEndpoint != nil else {
            throw .invalidValue(
                path: path,
                key: issuer == nil ? "issuer" : "endpoints.token",
                reason: issuer == nil ? "is required unless endpoints.token is given" : "is required without discovery"
            )
        }
        var scopes = ["openid"]
        if let value = table["scopes"] {
            guard let array = value.array, let list = Optional(array.compactMap(\.string)), list.count == array.count
            else {
                throw .wrongType(path: path, key: "scopes", expected: "an array of strings")
            }
            scopes = list
        }
        var flow = ProviderConfiguration.Flow.device
        if let text = try string("flow") {
            guard let parsed = ProviderConfiguration.Flow(rawValue: text) else {
                throw .invalidValue(path: path, key: "flow", reason: "must be device or authorization_code")
            }
            flow = parsed
        }
        func seconds(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Duration? {
            try table[key].map { value throws(ConfigurationError) in
                .seconds(try reader.integer(value, key: key, in: range))
            }
        }
        let timeout = try seconds("timeout", in: 1...300) ?? .seconds(10)
        let tokenTimeout = try seconds("token_timeout", in: 1...600) ?? max(timeout, .seconds(120))
        guard tokenTimeout >= timeout else {
            throw .invalidValue(path: path, key: "token_timeout", reason: "must not be shorter than timeout")
        }
        let secret = try clientSecret(
            file: try string("client_secret_file"),
            credential: try string("client_secret_credential"),
            credentialsDirectory: credentialsDirectory,
            path: path
        )
        return ProviderConfiguration(
            name: name,
            issuer: issuer,
            discovery: discovery,
            endpoints: endpoints,
            clientID: clientID,
            clientSecret: secret,
            scopes: scopes,
            flow: flow,
            caFile: try string("ca_file"),
            requestTimeout: timeout,
            tokenRequestTimeout: tokenTimeout
        )
    }

    /// TLS is required, except on the loopback interface, where a local test or development
    /// issuer runs.
    private static func checkURL(_ text: String, path: String, key: String) throws(ConfigurationError) {
        guard let url = URLComponents(string: text), let scheme = url.scheme, let host = url.host else {
            throw .invalidValue(path: path, key: key, reason: "is not an absolute URL")
        }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw .invalidValue(path: path, key: key, reason: "must use https (plain http only on 127.0.0.1)")
        }
    }

    private static func clientSecret(file: String?, credential: String?, credentialsDirectory: String?, path: String)
        throws(ConfigurationError) -> String?
    {
        let source: String
        if let credential {
            guard let directory = credentialsDirectory else {
                throw .invalidValue(
                    path: path,
                    key: "client_secret_credential",
                    reason: "needs $CREDENTIALS_DIRECTORY (LoadCredential=)"
                )
            }
            source = directory + "/" + credential
        } else if let file {
            source = file
        } else {
            return nil
        }
        let text = try ConfigurationFile.readText(source).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw .invalidValue(path: path, key: "client_secret", reason: "\(source) is empty") }
        return text
    }
}
