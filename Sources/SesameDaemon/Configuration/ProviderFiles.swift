import FoundationEssentials
import SesameProviders
import TOMLKit

/// Reads `providers.d/*.toml`: one OAuth / OpenID Connect provider per file. Every key is checked
/// like the main config file. A bad file takes only its own provider out (listed with what is
/// wrong, until it is fixed and sesamed reloaded; on a reload, a provider already running keeps
/// its settings): the others keep working.
package enum ProviderFiles {
    /// A provider file that could not be read as one.
    struct Broken: Sendable {
        /// The provider's name as its file name gives it.
        var name: String
        /// What is wrong, naming file, line or key.
        var error: ConfigurationError
    }

    /// What providers.d holds as last read.
    struct Loaded: Sendable {
        /// Every provider that reads, ordered by file name.
        var providers: [ProviderConfiguration] = []
        /// The files that do not read.
        var broken: [Broken] = []
        /// The file (its name without `.toml`) each provider comes from, by provider name: a
        /// file may name its provider otherwise, and a reload that finds the file broken must
        /// still know which running provider it was.
        var files: [String: String] = [:]
        /// The directory read; nil before any was.
        var directory: String?
    }

    /// Every provider in `directory` that reads and the files that do not; an absent directory
    /// means none.
    static func load(directory: String, credentialsDirectory: String?) throws(ConfigurationError) -> Loaded {
        guard FileManager.default.fileExists(atPath: directory) else { return Loaded(directory: directory) }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            // Unreadable is not empty: a reload must not drop every provider over it.
            throw .invalidValue(path: directory, key: "providers_directory", reason: "cannot be read")
        }
        var loaded = Loaded(directory: directory)
        for name in names.sorted() where name.hasSuffix(".toml") {
            let path = directory + "/" + name
            let file = String(name.dropLast(5))
            do throws(ConfigurationError) {
                let provider = try parse(
                    try ConfigurationFile.readText(path),
                    path: path,
                    defaultName: file,
                    credentialsDirectory: credentialsDirectory
                )
                guard loaded.files[provider.name] == nil else {
                    throw .invalidValue(path: path, key: "name", reason: "'\(provider.name)' is configured twice")
                }
                loaded.providers.append(provider)
                loaded.files[provider.name] = file
            } catch {
                loaded.broken.append(Broken(name: file, error: error))
            }
        }
        return loaded
    }

    package static func parse(_ text: String, path: String, defaultName: String, credentialsDirectory: String?)
        throws(ConfigurationError) -> ProviderConfiguration
    {
        let file = ProviderFile(table: try ConfigurationFile.table(text, path: path), path: path)
        let type = try file.type()
        for key in file.table.keys where !(commonKeys.contains(key) || type.extraKeys.contains(key)) {
            throw .unknownKey(path: path, key: key)
        }
        // In the order a person reads the file, so that the first problem is reported first.
        let name = try file.name(default: defaultName)
        guard let clientID = try file.string("client_id") else {
            throw .invalidValue(path: path, key: "client_id", reason: "is required")
        }
        let endpoints = try file.endpoints(type)
        let (issuer, discovery) = try file.issuer(type, endpoints: endpoints.standard)
        let flow = try file.flow(offeredBy: type)
        let (timeout, tokenTimeout) = try file.timeouts()
        let secret = try file.clientSecret(for: type, credentialsDirectory: credentialsDirectory)
        var configuration = ProviderConfiguration(
            name: name,
            kind: try type.kind(file, endpoints: endpoints.own, credentialsDirectory: credentialsDirectory),
            issuer: issuer,
            discovery: discovery,
            endpoints: endpoints.standard,
            clientID: clientID,
            clientSecret: secret,
            scopes: try file.strings("scopes") ?? type.scopes,
            flow: flow?.flow ?? type.flow,
            caFile: try file.string("ca_file"),
            requestTimeout: timeout,
            tokenRequestTimeout: tokenTimeout,
            authorizationParameters: try file.authorizationParameters(defaults: type.authorizationParameters),
            redirectURI: try file.redirectURI()
        )
        configuration.refreshPacing = try file.refreshPacing(type)
        configuration.notices = [flow?.notice].compactMap { $0 }
        return configuration
    }

    /// Keys every provider file may have; each type adds its own (`ProviderType.extraKeys`).
    static let commonKeys: Set<String> = [
        "name", "type", "issuer", "discovery", "client_id", "client_secret_file", "client_secret_credential", "scopes",
        "flow", "ca_file", "timeout", "token_timeout", "endpoints", "authorization_parameters", "redirect_uri",
        "min_refresh_interval",
    ]
}

/// The provider file's settings that are checked against each other or against the type.
extension ProviderFile {
    /// The provider's name: the file's `name`, else the file's own name.
    func name(default defaultName: String) throws(ConfigurationError) -> String {
        let name = try string("name") ?? defaultName
        guard !name.isEmpty, name.allSatisfy({ $0.isLowercase || $0.isNumber || "-_.".contains($0) }) else {
            throw .invalidValue(path: path, key: "name", reason: "must be lower-case letters, digits, '-', '_' or '.'")
        }
        return name
    }

    /// The issuer and whether to discover from it; without discovery, `endpoints.token` must
    /// say where tokens come from.
    func issuer(_ type: ProviderType, endpoints: OAuthEndpoints) throws(ConfigurationError)
        -> (issuer: String?, discovery: Bool)
    {
        let issuer = try url("issuer") ?? type.issuer
        let discovery = try bool("discovery") ?? type.discovers
        guard (issuer != nil && discovery) || endpoints.tokenEndpoint != nil else {
            throw .invalidValue(
                path: path,
                key: issuer == nil ? "issuer" : "endpoints.token",
                reason: issuer == nil ? "is required unless endpoints.token is given" : "is required without discovery"
            )
        }
        return (issuer, discovery)
    }

    /// The file's `flow`, which must be one the type offers, and any notice on its spelling;
    /// nil leaves it to the type.
    func flow(offeredBy type: ProviderType) throws(ConfigurationError)
        -> (flow: ProviderConfiguration.Flow, notice: String?)?
    {
        guard let (flow, notice) = try flow() else { return nil }
        guard !type.flows.contains(flow) else { return (flow, notice) }
        let offered = type.flows.map(\.rawValue).joined(separator: " or ")
        throw .invalidValue(
            path: path,
            key: "flow",
            reason: offered.isEmpty
                ? "does not apply to \(type.rawValue): its accounts arrive by code handover"
                : "must be \(offered): \(type.rawValue) offers no other"
        )
    }

    /// `timeout` for any request and `token_timeout` for token requests, never the shorter.
    func timeouts() throws(ConfigurationError) -> (request: Duration, token: Duration) {
        let timeout = try seconds("timeout", in: 1...300) ?? .seconds(10)
        let tokenTimeout = try seconds("token_timeout", in: 1...600) ?? max(timeout, .seconds(120))
        guard tokenTimeout >= timeout else {
            throw .invalidValue(path: path, key: "token_timeout", reason: "must not be shorter than timeout")
        }
        return (timeout, tokenTimeout)
    }

    /// The type's pacing of refreshes, with `min_refresh_interval` (seconds; 0 for none) over
    /// its minimum interval.
    func refreshPacing(_ type: ProviderType) throws(ConfigurationError) -> RefreshPacing {
        var pacing = type.refreshPacing
        let longest = Int(RefreshPacer.longestMemory.components.seconds)
        guard let interval = try seconds("min_refresh_interval", in: 0...longest) else { return pacing }
        pacing.minimumInterval = interval == .zero ? nil : interval
        if pacing.rule.isEmpty {
            let seconds = interval.components.seconds
            pacing.rule = "the provider file's min_refresh_interval allows one refresh every \(seconds) s"
        }
        return pacing
    }

    /// The client secret from a file or credential, required for types whose clients always have one.
    func clientSecret(for type: ProviderType, credentialsDirectory: String?) throws(ConfigurationError) -> String? {
        let secret = try secret(
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
        return secret
    }
}
