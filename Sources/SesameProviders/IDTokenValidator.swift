import ExtrasBase64
import FoundationEssentials
import JWTKit

/// The claims of an OpenID Connect ID token that Sesame relies on.
struct IDTokenClaims: JWTIdentityToken {
    var issuer: IssuerClaim
    var subject: SubjectClaim
    var audience: AudienceClaim
    var expiration: ExpirationClaim
    var nonce: String?
    var name: String?
    var email: String?
    var preferredUsername: String?
    /// OpenID Connect Core §5.1's casual name; Kakao's ID tokens carry it instead of `name`.
    var nickname: String?

    enum CodingKeys: String, CodingKey {
        case issuer = "iss"
        case subject = "sub"
        case audience = "aud"
        case expiration = "exp"
        case nonce, name, email, nickname
        case preferredUsername = "preferred_username"
    }

    /// Clocks disagree a little; an ID token is accepted up to this long past its expiry.
    static let leeway: TimeInterval = 60

    /// Expiry is checked by the validator, which knows whether it matters (it does not for an
    /// ID token an app hands over long after its login).
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Validates ID tokens against the provider's JWKS: signature (with an algorithm allow-list),
/// issuer, audience, expiry with a small leeway, and nonce. Keys are fetched when first needed
/// and again when a token names a key id we do not know, at most once a minute.
actor IDTokenValidator {
    private let issuer: String
    /// Other spellings of the issuer the provider documents (Google: `accounts.google.com`).
    private let issuerAliases: Set<String>
    private let clientID: String
    private let jwksURI: String
    private let allowedAlgorithms: Set<String>
    private let http: OAuthHTTP
    private var keys: JWTKeyCollection?
    private var lastFetch: ContinuousClock.Instant?
    static let refetchInterval: Duration = .seconds(60)

    init(
        issuer: String,
        aliases: Set<String> = [],
        clientID: String,
        jwksURI: String,
        allowedAlgorithms: [String],
        http: OAuthHTTP
    ) {
        self.issuer = issuer
        self.issuerAliases = aliases
        self.clientID = clientID
        self.jwksURI = jwksURI
        self.allowedAlgorithms = Set(allowedAlgorithms)
        self.http = http
    }

    /// The token's claims, or `invalidResponse` saying what is wrong with it. `checkExpiry`
    /// is false only for an ID token handed over by an app, which says who logged in, not
    /// whether the login is recent.
    func validate(_ token: String, nonce: String?, checkExpiry: Bool = true) async throws(ProviderError)
        -> IDTokenClaims
    {
        try checkAlgorithm(token)
        var claims = try await verify(token, refetchIfUnknown: true)
        guard claims.issuer.value == issuer || issuerAliases.contains(claims.issuer.value) else {
            let named = ProviderText.sanitized(claims.issuer.value, limit: 120)
            throw .invalidResponse("the ID token was issued by \(named), not \(issuer)")
        }
        if checkExpiry {
            do {
                try claims.expiration.verifyNotExpired(
                    currentDate: http.clock.now.addingTimeInterval(-IDTokenClaims.leeway)
                )
            } catch {
                throw .invalidResponse("the ID token is expired")
            }
        }
        if let nonce, claims.nonce != nonce {
            throw .invalidResponse("the ID token's nonce does not match the login")
        }
        claims.nonce = nil
        return claims
    }

    /// Verifies with the keys at hand, fetching them anew once when the token names a key id
    /// they lack. "Cannot check now" (the JWKS unreachable or unreadable, a key id still unknown
    /// while a refetch is not yet allowed) is `transient`, so a caller never refuses, and never
    /// revokes, a provider's answer only because its keys could not be read at that moment.
    private func verify(_ token: String, refetchIfUnknown: Bool) async throws(ProviderError) -> IDTokenClaims {
        let keys = try await currentKeys()
        do {
            return try await keys.verify(token, as: IDTokenClaims.self, expectedAudience: clientID)
        } catch let error as JWTError where error.errorType == .unknownKID || error.errorType == .missingKIDHeader {
            guard refetchIfUnknown else {
                // The keys were fetched just now and still lack it: the provider did not sign this.
                throw .invalidResponse("the ID token is signed with a key that is not in the provider's JWKS")
            }
            guard mayRefetch else {
                throw .transient(
                    reason: "the ID token names a key not in the JWKS fetched less than a minute ago",
                    retryAfter: Self.refetchInterval
                )
            }
            try await fetchKeys()
            return try await verify(token, refetchIfUnknown: false)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw .invalidResponse("the ID token's signature does not verify")
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            let reason = ProviderText.sanitized(error.reason ?? "claims", limit: 120)
            throw .invalidResponse("the ID token is not meant for this client (\(reason))")
        } catch let error as JWTError where error.errorType == .malformedToken {
            throw .invalidResponse("the ID token is not a well-formed JWT")
        } catch {
            throw .transient(
                reason: "the ID token cannot be checked now (\(type(of: error)))",
                retryAfter: .seconds(30)
            )
        }
    }

    private var mayRefetch: Bool {
        guard let lastFetch else { return true }
        return ContinuousClock.now - lastFetch >= Self.refetchInterval
    }

    private func currentKeys() async throws(ProviderError) -> JWTKeyCollection {
        if let keys { return keys }
        guard mayRefetch else {
            throw .transient(reason: "the provider's JWKS could not be read a moment ago", retryAfter: .seconds(30))
        }
        return try await fetchKeys()
    }

    /// Fetches the JWKS, at most once a minute; the keys at hand stay until a fetch succeeds.
    @discardableResult
    private func fetchKeys() async throws(ProviderError) -> JWTKeyCollection {
        lastFetch = .now
        let response = try await http.get(jwksURI)
        guard response.status.code == 200 else {
            throw .transient(reason: "JWKS answered HTTP \(response.status.code)", retryAfter: .seconds(5))
        }
        let collection = JWTKeyCollection()
        do {
            try await collection.add(jwksJSON: String(decoding: response.body, as: UTF8.self))
        } catch {
            throw .transient(reason: "the provider's JWKS cannot be read", retryAfter: .seconds(30))
        }
        keys = collection
        return collection
    }

    /// Refuses `none` and anything else outside the allow-list before any key is involved.
    private func checkAlgorithm(_ token: String) throws(ProviderError) {
        struct Header: Decodable { var alg: String }
        guard let encoded = token.split(separator: ".", omittingEmptySubsequences: false).first,
            let data = Data(base64URLEncoded: String(encoded)),
            let header = try? JSONDecoder().decode(Header.self, from: data)
        else {
            throw .invalidResponse("the ID token is not a JWT")
        }
        guard allowedAlgorithms.contains(header.alg) else {
            let named = ProviderText.sanitized(header.alg, limit: 32)
            throw .invalidResponse("the ID token uses algorithm \(named), which is not allowed")
        }
    }
}

/// What can be read of an ID token that was checked when it was received.
public enum CheckedIDToken {
    /// Its `exp` claim, read without checking the signature again: to know how long it lasts.
    public static func expiry(of token: String) -> Date? {
        struct Claims: Decodable { var exp: Double? }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URLEncoded: String(parts[1])),
            let exp = (try? JSONDecoder().decode(Claims.self, from: data))?.exp
        else { return nil }
        return Date(timeIntervalSince1970: exp)
    }
}

extension Data {
    /// Decodes unpadded base64url (RFC 4648 §5), as JWTs use it.
    init?(base64URLEncoded text: String) {
        guard let bytes = try? Base64.decode(string: text, options: [.base64UrlAlphabet, .omitPaddingCharacter])
        else { return nil }
        self.init(bytes)
    }

    /// Encodes as unpadded base64url.
    var base64URLEncoded: String {
        Base64.encodeToString(bytes: self, options: [.base64UrlAlphabet, .omitPaddingCharacter])
    }
}
