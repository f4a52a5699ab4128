/// `ListProviders`' reply.
public struct ListProvidersReply: Sendable, Codable, Hashable {
    /// The configured providers.
    public var providers: [Provider]
    /// The directory sesamed reads provider files from, for a person adding the first one.
    public var directory: String?
    /// Creates the reply.
    public init(providers: [Provider], directory: String? = nil) {
        self.providers = providers
        self.directory = directory
    }
}

/// `CheckProvider`'s parameters: the provider to check.
public struct ProviderParameters: Sendable, Codable, Hashable {
    /// The configured provider's name.
    public var provider: String
    /// Creates the parameters.
    public init(provider: String) { self.provider = provider }
}

/// `CheckProvider`'s reply: the provider's file and what each check found.
public struct CheckProviderReply: Sendable, Codable, Hashable {
    /// The provider's file, when sesamed read it from one.
    public var file: String?
    /// Each check, in the order a person reads the file.
    public var checks: [ProviderCheck]
    /// Creates the reply.
    public init(file: String?, checks: [ProviderCheck]) {
        self.file = file
        self.checks = checks
    }
}

/// One thing asked of a provider about its configuration: a URL that must answer, or whether
/// the provider knows the client.
public struct ProviderCheck: Sendable, Codable, Hashable {
    /// What was checked: "discovery document", "token endpoint", "client_id", ….
    public var subject: String
    /// The URL asked, when one was.
    public var url: String?
    /// The provider-file key to mend when it fails (`issuer` for what discovery gave); nil when
    /// no one key is to blame (a file that is not TOML, the checks stopped short).
    public var key: String?
    /// What the answer showed, when it passed.
    public var finding: String?
    /// Why it did not pass, in Sesame's words; nil when it passed.
    public var problem: String?

    /// Creates a check's outcome.
    public init(subject: String, url: String?, key: String?, finding: String?, problem: String?) {
        self.subject = subject
        self.url = url
        self.key = key
        self.finding = finding
        self.problem = problem
    }
}
