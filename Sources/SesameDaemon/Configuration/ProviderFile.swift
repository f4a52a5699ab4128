import FoundationEssentials
import SesameProtocol
import SesameProviders
import TOMLKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One provider file's table, read key by key with errors that name the file and the key.
struct ProviderFile {
    let table: TOMLTable
    let path: String
    var reader: Reader { Reader(path: path) }

    func string(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = table[key] else { return nil }
        guard let text = value.string else { throw .wrongType(path: path, key: key, expected: "a string") }
        return text
    }

    func bool(_ key: String) throws(ConfigurationError) -> Bool? {
        try table[key].map { value throws(ConfigurationError) in try reader.bool(value, key: key) }
    }

    func seconds(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Duration? {
        try table[key].map { value throws(ConfigurationError) in
            .seconds(try reader.integer(value, key: key, in: range))
        }
    }

    func strings(_ key: String) throws(ConfigurationError) -> [String]? {
        guard let value = table[key] else { return nil }
        guard let array = value.array, case let list = array.compactMap(\.string), list.count == array.count else {
            throw .wrongType(path: path, key: key, expected: "an array of strings")
        }
        return list
    }

    func url(_ key: String) throws(ConfigurationError) -> String? {
        guard let text = try string(key) else { return nil }
        try Self.checkURL(text, path: path, key: key)
        return text
    }

    func type() throws(ConfigurationError) -> ProviderType {
        guard let text = try string("type") else { return .oidc }
        guard let type = ProviderType(rawValue: text) else {
            let names = ProviderType.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalidValue(path: path, key: "type", reason: "must be one of \(names)")
        }
        return type
    }

    /// The file's `flow`, spelled as the Varlink API and `sesamectl providers` spell it
    /// (`device`, `authorizationCode`); the older `authorization_code` still reads, with a
    /// notice that says what to write instead.
    func flow() throws(ConfigurationError) -> (flow: ProviderConfiguration.Flow, notice: String?)? {
        guard let text = try string("flow") else { return nil }
        if text == "authorization_code" {
            let notice = "\(path): flow = \"authorization_code\" is the old spelling; write \"authorizationCode\""
            return (.authorizationCode, notice)
        }
        guard let flow = ProviderConfiguration.Flow(rawValue: text) else {
            throw .invalidValue(path: path, key: "flow", reason: "must be \"device\" or \"authorizationCode\"")
        }
        return (flow, nil)
    }

    /// `[endpoints]`: the standard ones, with the type's documented defaults filled in, and the
    /// type's own (Kakao's `user`, Naver's `profile`, …) by key.
    func endpoints(_ type: ProviderType) throws(ConfigurationError) -> (standard: OAuthEndpoints, own: [String: String])
    {
        var given: [String: String] = [:]
        if let value = table["endpoints"] {
            guard let sub = value.table else { throw .wrongType(path: path, key: "endpoints", expected: "a table") }
            let standard = [
                "token", "device_authorization", "authorization", "revocation", "jwks", "userinfo", "introspection",
            ]
            for key in sub.keys {
                guard standard.contains(key) || type.extraEndpoints.contains(key) else {
                    throw .unknownKey(path: path, key: "endpoints.\(key)")
                }
                guard let text = sub[key]?.string else {
                    throw .wrongType(path: path, key: "endpoints.\(key)", expected: "a URL")
                }
                try Self.checkURL(text, path: path, key: "endpoints.\(key)")
                given[key] = text
            }
        }
        let standard = OAuthEndpoints(
            tokenEndpoint: given["token"],
            deviceAuthorizationEndpoint: given["device_authorization"],
            authorizationEndpoint: given["authorization"],
            revocationEndpoint: given["revocation"],
            jwksURI: given["jwks"],
            userinfoEndpoint: given["userinfo"],
            introspectionEndpoint: given["introspection"]
        )
        return (standard.filled(from: type.endpoints), given.filter { type.extraEndpoints.contains($0.key) })
    }

    /// `[authorization_parameters]`, over the type's defaults; never one Sesame sets itself.
    func authorizationParameters(defaults: [String: String]) throws(ConfigurationError) -> [String: String] {
        guard let value = table["authorization_parameters"] else { return defaults }
        guard let sub = value.table else {
            throw .wrongType(path: path, key: "authorization_parameters", expected: "a table")
        }
        var parameters = defaults
        for key in sub.keys {
            let name = "authorization_parameters.\(key)"
            guard !ProviderConfiguration.reservedAuthorizationParameters.contains(key) else {
                throw .invalidValue(path: path, key: name, reason: "is set by sesamed itself and cannot be replaced")
            }
            guard let text = sub[key]?.string else { throw .wrongType(path: path, key: name, expected: "a string") }
            parameters[key] = text
        }
        return parameters
    }

    /// `redirect_uri`: the registered loopback redirect, with its port (RFC 8252 §7.3). Only the
    /// IP literal: a browser may try `localhost` on ::1 first, where another local user could
    /// listen on the same port and take the code (RFC 8252 §8.3).
    func redirectURI() throws(ConfigurationError) -> String? {
        guard let text = try string("redirect_uri") else { return nil }
        guard let url = URLComponents(string: text), url.scheme == "http", url.host == "127.0.0.1",
            let port = url.port, (1...65535).contains(port), url.query == nil, url.fragment == nil
        else {
            throw .invalidValue(
                path: path,
                key: "redirect_uri",
                reason: "must be http://127.0.0.1:PORT/PATH (the IP literal, not localhost, and a port)"
            )
        }
        return text
    }

    /// A secret from a systemd credential (`LoadCredential=`) or a file; nil when neither key is set.
    /// `private` files (keys) must not be readable by group or others.
    func secret(fileKey: String, credentialKey: String, credentialsDirectory: String?, private: Bool = false)
        throws(ConfigurationError) -> String?
    {
        let source: String
        if let credential = try string(credentialKey) {
            guard let directory = credentialsDirectory else {
                throw .invalidValue(
                    path: path,
                    key: credentialKey,
                    reason: "needs $CREDENTIALS_DIRECTORY (LoadCredential=)"
                )
            }
            source = directory + "/" + credential
        } else if let file = try string(fileKey) {
            if `private` {
                var status = stat()
                if stat(file, &status) == 0, status.st_mode & 0o077 != 0 {
                    throw .invalidValue(
                        path: path,
                        key: fileKey,
                        reason: "\(file) must not be readable by group or others"
                    )
                }
            }
            source = file
        } else {
            return nil
        }
        let text = String(try ConfigurationFile.readText(source).trimmingWhitespace())
        guard !text.isEmpty else { throw .invalidValue(path: path, key: fileKey, reason: "\(source) is empty") }
        return text
    }

    /// TLS is required, except on the loopback interface, where a local test or development
    /// issuer runs.
    static func checkURL(_ text: String, path: String, key: String) throws(ConfigurationError) {
        guard let url = URLComponents(string: text), let scheme = url.scheme, let host = url.host else {
            throw .invalidValue(path: path, key: key, reason: "is not an absolute URL")
        }
        guard scheme == "https" || (scheme == "http" && Loopback.isLiteral(host)) else {
            throw .invalidValue(path: path, key: key, reason: "must use https (plain http only on 127.0.0.1)")
        }
    }
}
