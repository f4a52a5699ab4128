import SesameProviders

/// A provider file's `type`: which adapter it selects, the keys only that adapter reads, and
/// the provider's documented defaults for everything the file leaves out.
enum ProviderType: String, CaseIterable {
    case oidc, kakao, naver, google, apple

    /// Keys beyond `ProviderFiles.commonKeys`.
    var extraKeys: Set<String> {
        switch self {
        case .kakao: ["logout_method"]
        case .apple: ["team_id", "key_id", "private_key_file", "private_key_credential"]
        case .oidc, .naver, .google: []
        }
    }

    /// `[endpoints]` keys beyond the standard ones.
    var extraEndpoints: Set<String> {
        switch self {
        case .kakao: ["user", "logout", "unlink", "token_info"]
        case .naver: ["profile"]
        case .oidc, .google, .apple: []
        }
    }

    var issuer: String? {
        switch self {
        case .kakao: KakaoProvider.issuer
        case .google: GoogleProvider.issuer
        case .apple: AppleProvider.issuer
        case .oidc, .naver: nil
        }
    }

    /// The provider's documented limits on refreshing one account.
    var refreshPacing: RefreshPacing {
        switch self {
        case .apple: AppleProvider.refreshPacing
        case .kakao: KakaoProvider.refreshPacing
        case .oidc, .naver, .google: RefreshPacing()
        }
    }

    /// Only Google publishes a discovery document every app can rely on; Kakao's exists only
    /// with OpenID Connect enabled, and its endpoints are documented anyway.
    var discovers: Bool { self == .oidc || self == .google }

    var endpoints: OAuthEndpoints {
        switch self {
        case .kakao: KakaoProvider.endpoints
        case .naver: NaverProvider.endpoints
        case .apple: AppleProvider.endpoints
        case .oidc, .google: OAuthEndpoints()
        }
    }

    var scopes: [String] {
        switch self {
        case .oidc: ["openid"]
        case .google: ["openid", "email", "profile"]
        // Kakao's and Naver's consent items are chosen in their consoles; Apple's app asks.
        case .kakao, .naver, .apple: []
        }
    }

    var flow: ProviderConfiguration.Flow {
        switch self {
        case .oidc: .device
        // Google's device flow is for "TVs and Limited Input devices" clients only.
        case .kakao, .naver, .google, .apple: .authorizationCode
        }
    }

    /// The login flows the type's adapter offers.
    var flows: [ProviderConfiguration.Flow] {
        switch self {
        case .oidc, .google: ProviderConfiguration.Flow.allCases
        case .kakao: KakaoProvider.supportedFlows
        case .naver: NaverProvider.supportedFlows
        case .apple: AppleProvider.supportedFlows
        }
    }

    var authorizationParameters: [String: String] {
        self == .google ? GoogleProvider.defaultAuthorizationParameters : [:]
    }

    /// Naver's and Google's clients always have a secret; Kakao's only when enabled, and
    /// Apple's is signed by sesamed.
    var requiresClientSecret: Bool { self == .naver || self == .google }

    /// The adapter with its own settings read from `file`.
    func kind(_ file: ProviderFile, endpoints: [String: String], credentialsDirectory: String?)
        throws(ConfigurationError) -> ProviderKind
    {
        switch self {
        case .oidc: return .oidc
        case .google: return .google
        case .naver:
            var settings = NaverProvider.Settings()
            if let profile = endpoints["profile"] { settings.profileEndpoint = profile }
            return .naver(settings)
        case .kakao:
            var settings = KakaoProvider.Settings()
            if let method = try file.string("logout_method") {
                guard let parsed = KakaoProvider.Settings.LogoutMethod(rawValue: method) else {
                    throw .invalidValue(path: file.path, key: "logout_method", reason: "must be logout or unlink")
                }
                settings.logoutMethod = parsed
            }
            if let url = endpoints["user"] { settings.userEndpoint = url }
            if let url = endpoints["logout"] { settings.logoutEndpoint = url }
            if let url = endpoints["unlink"] { settings.unlinkEndpoint = url }
            if let url = endpoints["token_info"] { settings.tokenInfoEndpoint = url }
            return .kakao(settings)
        case .apple:
            return .apple(try appleSettings(file, credentialsDirectory: credentialsDirectory))
        }
    }

    private func appleSettings(_ file: ProviderFile, credentialsDirectory: String?) throws(ConfigurationError)
        -> AppleProvider.Settings
    {
        for key in ["client_secret_file", "client_secret_credential"] where file.table[key] != nil {
            throw .invalidValue(
                path: file.path,
                key: key,
                reason: "does not apply to Apple: sesamed signs the client secret with private_key_file"
            )
        }
        guard let teamID = try file.string("team_id") else {
            throw .invalidValue(path: file.path, key: "team_id", reason: "is required")
        }
        guard let keyID = try file.string("key_id") else {
            throw .invalidValue(path: file.path, key: "key_id", reason: "is required")
        }
        guard
            let key = try file.secret(
                fileKey: "private_key_file",
                credentialKey: "private_key_credential",
                credentialsDirectory: credentialsDirectory,
                private: true
            )
        else {
            throw .invalidValue(
                path: file.path,
                key: "private_key_file",
                reason: "(or private_key_credential) is required"
            )
        }
        guard AppleProvider.Settings.isUsableKey(key) else {
            throw .invalidValue(
                path: file.path,
                key: "private_key_file",
                reason: "is not a .p8 key (PKCS#8 PEM, P-256)"
            )
        }
        return AppleProvider.Settings(teamID: teamID, keyID: keyID, privateKey: key)
    }
}
