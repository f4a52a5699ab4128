import FoundationEssentials
import JWTKit
import SesameCore
import SesameProtocol

/// Sign in with Apple (developer.apple.com, "Generate and validate tokens", "Revoke tokens",
/// "Creating a client secret"). Apple redirects only to https pages on a domain registered for
/// the app, so sesamed cannot receive the redirect itself: an app or web page signs the person
/// in and hands the authorization code over (`RedeemCode`). The client secret is a short-lived
/// ES256 JWT that sesamed signs with the team's private key and renews before it expires.
public final class AppleProvider: OIDCBasedAdapter {
    /// "Revoke tokens" (/auth/revoke) invalidates the tokens and the person's authorization of
    /// the app, and with it every other token of theirs.
    public var revocationEndsEveryGrant: Bool { true }

    /// What only an Apple provider file configures.
    public struct Settings: Sendable, Hashable, CustomStringConvertible {
        /// The team id, the client secret's `iss`.
        public var teamID: String
        /// The key id of the private key, the client secret's `kid`.
        public var keyID: String
        /// The private key (.p8: PKCS#8 PEM of a P-256 key), read from a credential or a file
        /// only root can read.
        public var privateKey: String

        /// Creates the settings.
        public init(teamID: String, keyID: String, privateKey: String) {
            self.teamID = teamID
            self.keyID = keyID
            self.privateKey = privateKey
        }

        /// Whether `pem` is a key Apple's client secret can be signed with.
        public static func isUsableKey(_ pem: String) -> Bool {
            (try? ES256PrivateKey(pem: pem)) != nil
        }

        /// The ids only, never the key.
        public var description: String { "team \(teamID), key \(keyID)" }
    }

    /// Apple's issuer, the `iss` of its ID tokens and the `aud` of client secrets.
    public static let issuer = "https://appleid.apple.com"
    /// Apple's documented endpoints. Its authorization endpoint
    /// (https://appleid.apple.com/auth/authorize) is the app's to call, not sesamed's.
    public static let endpoints = OAuthEndpoints(
        tokenEndpoint: "https://appleid.apple.com/auth/token",
        revocationEndpoint: "https://appleid.apple.com/auth/revoke",
        jwksURI: "https://appleid.apple.com/auth/keys"
    )
    /// Why `Login` cannot be done for Apple, and what to do instead.
    static let handoverOnly =
        "Sign in with Apple redirects only to https pages on a domain registered for your app, so sesamed "
        + "cannot receive the login itself; sign in in your app or web page and hand the code over with "
        + "`sesamectl import apple --code -`."

    let base: GenericOIDCProvider
    /// None: Apple's redirect cannot reach this machine.
    public var loginFlows: [ProviderConfiguration.Flow] { Self.supportedFlows }
    /// The flows this provider offers, known before any adapter exists (to check provider files).
    public static let supportedFlows: [ProviderConfiguration.Flow] = []
    /// Why, and the code handover to use instead.
    public var loginUnavailable: String? {
        Self.handoverOnly.replacing("import apple", with: "import \(configuration.name)")
    }

    /// Creates the adapter, sending over `transport` (which must outlive it) and reading time from `clock`.
    public init(
        configuration: ProviderConfiguration,
        settings: Settings,
        transport: any HTTPTransport,
        clock: any SessionClock = SystemSessionClock()
    ) {
        let secret = AppleClientSecret(settings: settings, clientID: configuration.clientID)
        var credentials = ClientCredentials(
            placement: .body,
            secret: { () async throws(ProviderError) in
                try await secret.value()
            }
        )
        credentials.refusalAdvice =
            "Apple refused the client-secret JWT sesamed signs; check team_id, key_id, client_id (the Services ID "
            + "or bundle id) and the private key in the provider file"
        base = GenericOIDCProvider(
            configuration: configuration,
            http: OAuthHTTP(transport: transport, configuration: configuration, clock: clock),
            credentials: credentials
        )
    }

    /// Redeems the code (single-use, valid five minutes). Apple posts the person's name only
    /// with the first authorization, in the `user` field; it becomes the display name, and a
    /// later login without it keeps the name the account has.
    public func redeemCode(_ handover: HandedOverCode) async throws(ProviderError) -> ProviderLogin {
        var login = try await base.redeemCode(handover)
        login.displayName = handover.user.flatMap(Self.name(fromUser:)).map(ProviderText.displayName)
        return login
    }

    /// "First Last" from Apple's `user` JSON, else its email.
    static func name(fromUser json: String) -> String? {
        struct User: Decodable {
            struct Name: Decodable {
                var firstName: String?
                var lastName: String?
            }
            var name: Name?
            var email: String?
        }
        guard json.utf8.count <= 4096, let user = try? JSONDecoder().decode(User.self, from: Data(json.utf8)) else {
            return nil
        }
        let full = [user.name?.firstName, user.name?.lastName].compactMap { $0 }.joined(separator: " ")
        return full.isEmpty ? user.email : full
    }
}

/// The client secret Apple wants ("Creating a client secret"): an ES256 JWT with `kid` = key
/// id, `iss` = team id, `sub` = client id, `aud` = https://appleid.apple.com, and `exp` at most
/// 15,777,000 s (six months) after `iat`. sesamed signs one for a day and renews it an hour
/// before it expires.
actor AppleClientSecret {
    static let lifetime: TimeInterval = 86400
    static let renewalMargin: TimeInterval = 3600
    private let settings: AppleProvider.Settings
    private let clientID: String
    private var current: (jwt: String, expiresAt: Date)?

    init(settings: AppleProvider.Settings, clientID: String) {
        self.settings = settings
        self.clientID = clientID
    }

    /// A client secret valid for at least another hour.
    func value() async throws(ProviderError) -> String {
        if let current, current.expiresAt.timeIntervalSinceNow > Self.renewalMargin { return current.jwt }
        // Whole seconds: Apple documents `iat` and `exp` as seconds since the epoch.
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let claims = Claims(
            iss: IssuerClaim(value: settings.teamID),
            iat: IssuedAtClaim(value: now),
            exp: ExpirationClaim(value: now.addingTimeInterval(Self.lifetime)),
            aud: AudienceClaim(value: AppleProvider.issuer),
            sub: SubjectClaim(value: clientID)
        )
        do {
            let keys = JWTKeyCollection()
            let kid = JWKIdentifier(string: settings.keyID)
            await keys.add(ecdsa: try ES256PrivateKey(pem: settings.privateKey), kid: kid)
            let jwt = try await keys.sign(claims, kid: kid)
            current = (jwt, claims.exp.value)
            return jwt
        } catch {
            throw .misconfigured(
                "the Apple private key cannot sign a client secret; set private_key_file to the .p8 key"
            )
        }
    }

    private struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var aud: AudienceClaim
        var sub: SubjectClaim

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
