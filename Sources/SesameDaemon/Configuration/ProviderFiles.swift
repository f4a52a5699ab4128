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
        let file = ProviderFile(table: try ConfigurationFile.table(text, path: path), path: path)
        let type = try file.type()
        for key in file.table.keys where !(commonKeys.contains(key) || type.extraKeys.contains(key)) {
            throw .unknownKey(path: path, key: key)
        }
        let name = try file.string("name") ?? defaultName
        guard !name.isEmpty, name.allSatisfy({ $0.isLowercase || $0.isNumber || "-_.".contains($0) }) else {
            throw .invalidValue(path: path, key: "name", reason: "must be lower-case letters, digits, '-', '_' or '.'")
        }
        guard let clientID = try file.string("client_id") else {
            throw .invalidValue(path: path, key: "client_id", reason: "is required")
        }
        let endpoints = try file.endpoints(type)
        let issuer = try file.url("issuer") ?? type.issuer
        let discovery = try file.bool("discovery") ?? type.discovers
        guard (issuer != nil && discovery) || endpoints.standard.tokenEndpoint != nil else {
            throw .invalidValue(
                path: path,
                key: issuer == nil ? "issuer" : "endpoints.token",
                reason: issuer == nil ? "is required unless endpoints.token is given" : "is required without discovery"
            )
        }
        let flow = try file.flow()
        if let flow, !type.flows.contains(flow) {
            let offered = type.flows.map(\.rawValue).joined(separator: " or ")
            throw .invalidValue(
                path: path,
                key: "flow",
                reason: offered.isEmpty
                    ? "does not apply to \(type.rawValue): its accounts arrive by code handover"
                    : "must be \(offered): \(type.rawValue) offers no other"
            )
        }
        let timeout = try file.seconds("timeout", in: 1...300) ?? .seconds(10)
        let tokenTimeout = try file.seconds("token_timeout", in: 1...600) ?? max(timeout, .seconds(120))
        guard tokenTimeout >= timeout else {
            throw .invalidValue(path: path, key: "token_timeout", reason: "must not be shorter than timeout")
        }
        let secret = try file.secret(
            fileKey: "client_secret_file",
            credentialKey: "client_secret_credential",
            credentialsDirectory: credentialsDirectory
        )
        if secret == nil, type.requiresClientSecret {
            throw .invalidValue(
                path: path,
                key: "client_secret_file",
                reason: "(or client_secret_credential) is required: \(type.rawValue) clients always have a secret"
            )
        }
        return ProviderConfiguration(
            name: name,
            kind: try type.kind(file, endpoints: endpoints.own, credentialsDirectory: credentialsDirectory),
            issuer: issuer,
            discovery: discovery,
            endpoints: endpoints.standard,
            clientID: clientID,
            clientSecret: secret,
            scopes: try file.strings("scopes") ?? type.scopes,
            flow: flow ?? type.flow,
            caFile: try file.string("ca_file"),
            requestTimeout: timeout,
            tokenRequestTimeout: tokenTimeout,
            authorizationParameters: try file.authorizationParameters(defaults: type.authorizationParameters),
            redirectURI: try file.redirectURI()
        )
    }

    /// Keys every provider file may have; each type adds its own (`ProviderType.extraKeys`).
    static let commonKeys: Set<String> = [
        "name", "type", "issuer", "discovery", "client_id", "client_secret_file", "client_secret_credential", "scopes",
        "flow", "ca_file", "timeout", "token_timeout", "endpoints", "authorization_parameters", "redirect_uri",
    ]
}
