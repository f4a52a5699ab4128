import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOHTTP1
import SesameCore

/// The few HTTP exchanges OAuth needs, each with a timeout, and the one place where what came
/// back is classified: success, an OAuth error, a passing failure, or an invalid answer.
struct OAuthHTTP: Sendable {
    let transport: any HTTPTransport
    /// How long a request may take.
    let timeout: Duration
    /// The CA bundle the client trusts besides the system's, named in TLS errors.
    let caFile: String?
    /// What "now" is for expiry: token lifetimes, ID token times, device codes, polling pace.
    let clock: any SessionClock
    /// Secrets the provider knows whatever is asked (the client secret): cut out of anything it
    /// says, on every request, not only those that carry them.
    let standingSecrets: [String]

    /// The exchanges a provider configured by `configuration` makes over `transport`.
    init(transport: any HTTPTransport, configuration: ProviderConfiguration, clock: any SessionClock) {
        self.transport = transport
        self.timeout = configuration.requestTimeout
        self.caFile = configuration.caFile
        self.clock = clock
        self.standingSecrets = configuration.clientSecret.map { [$0] } ?? []
    }
    /// Responses larger than this are not OAuth responses.
    static let maximumBody = 1 << 20
    /// Form fields whose values are secrets: cut out of anything the provider says back.
    static let secretFields: Set<String> = [
        "refresh_token", "code", "code_verifier", "device_code", "token", "client_secret", "client_assertion",
        "assertion", "password", "access_token", "subject_token", "actor_token",
    ]

    /// A response body with its status and headers, and the secrets its request carried.
    struct Response {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var body: Data
        /// What the request carried that the provider must not be quoted on.
        var secrets: [String] = []
    }

    /// GETs `url`, presenting `bearer` (RFC 6750 §2.1) when given.
    func get(_ url: String, bearer: String? = nil) async throws(ProviderError) -> Response {
        var request = TransportRequest(method: .GET, url: url, headers: ["Accept": "application/json"])
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        var response = try await send(request, timeout: timeout)
        response.secrets = (bearer.map { [$0] } ?? []) + standingSecrets
        return response
    }

    /// POSTs `fields` as a form; `timeout` replaces the usual limit (token requests wait longer,
    /// because their answer may carry the only copy of a grant).
    func postForm(
        _ url: String,
        _ fields: [(String, String)],
        basicAuth: (String, String)? = nil,
        bearer: String? = nil,
        timeout: Duration? = nil
    ) async throws(ProviderError) -> Response {
        var request = TransportRequest(
            method: .POST,
            url: url,
            headers: ["Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"]
        )
        if let (user, password) = basicAuth {
            let credentials = Data("\(Self.formEncode(user)):\(Self.formEncode(password))".utf8).base64EncodedString()
            request.headers.add(name: "Authorization", value: "Basic \(credentials)")
        }
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        let body = fields.map { "\(Self.formEncode($0.0))=\(Self.formEncode($0.1))" }.joined(separator: "&")
        request.body = Data(body.utf8)
        var response = try await send(request, timeout: timeout ?? self.timeout)
        response.secrets =
            fields.filter { Self.secretFields.contains($0.0) }.map(\.1) + (basicAuth.map { [$0.1] } ?? [])
            + (bearer.map { [$0] } ?? []) + standingSecrets
        return response
    }

    private func send(_ request: TransportRequest, timeout: Duration) async throws(ProviderError) -> Response {
        do {
            let response = try await transport.send(request, timeout: timeout, maximumBody: Self.maximumBody)
            return Response(status: response.status, headers: response.headers, body: response.body)
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout
            || error == .connectTimeout
        {
            throw .transient(reason: "timed out after \(timeout.components.seconds) s", retryAfter: .seconds(5))
        } catch is NIOTooManyBytesError {
            throw .invalidResponse("the response is larger than \(Self.maximumBody) bytes")
        } catch is CancellationError {
            throw .transient(reason: "cancelled", retryAfter: .seconds(5))
        } catch {
            if let failure = TLSFailure(error),
                let explanation = await failure.explanation(url: request.url, caFile: caFile)
            {
                // A certificate that does not verify will not verify on the next try either.
                throw .untrustedCertificate(explanation)
            }
            // Connection refused or reset: nothing says the provider is gone for good.
            throw .transient(reason: UnreachedProvider.reason(error, url: request.url), retryAfter: .seconds(5))
        }
    }

    /// `application/x-www-form-urlencoded` escaping (RFC 6749 appendix B): the value's UTF-8
    /// bytes, each outside RFC 3986's unreserved set (ASCII letters and digits, `-._~`) as `%XX`,
    /// so a letter outside ASCII is escaped too.
    static func formEncode(_ value: String) -> String {
        let hexDigits = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.append(byte)
            default:
                encoded += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Classifies an answer of a token-style endpoint: the decoded success body, or the error
    /// it amounts to. `pendingErrors` are OAuth errors the caller handles itself (device polling).
    static func classify<Success: Decodable>(_ response: Response, as type: Success.Type) throws(ProviderError)
        -> Success
    {
        switch response.status.code {
        case 200..<300:
            do {
                return try JSONDecoder().decode(type, from: response.body)
            } catch {
                throw .invalidResponse("malformed JSON from the provider")
            }
        case 429:
            throw .transient(reason: "HTTP 429", retryAfter: retryAfter(response.headers) ?? .seconds(30))
        case 500..<600:
            throw .transient(
                reason: "HTTP \(response.status.code)",
                retryAfter: retryAfter(response.headers) ?? .seconds(5)
            )
        case 400, 401, 403:
            guard let error = try? JSONDecoder().decode(OAuthErrorBody.self, from: response.body) else {
                throw .invalidResponse("HTTP \(response.status.code) without an OAuth error")
            }
            throw Self.error(error, of: response)
        default:
            throw .invalidResponse("unexpected HTTP \(response.status.code)")
        }
    }

    /// Secrets an earlier request of the same operation carried (an authorization code and its
    /// verifier, for the requests that follow its exchange): the provider knows them, so its
    /// words on a later request may repeat them, and they are cut out of those words too.
    @TaskLocal static var earlierSecrets: [String] = []

    /// Runs `body` with `secrets` among the `earlierSecrets`.
    static func redacting<T>(
        _ secrets: [String],
        in body: () async throws(ProviderError) -> T
    ) async throws(ProviderError) -> T {
        let result: Result<T, ProviderError> = await $earlierSecrets.withValue(earlierSecrets + secrets) {
            do throws(ProviderError) { return .success(try await body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// What an OAuth error answer (RFC 6749 §5.2) means, whatever status it came with.
    static func error(_ error: OAuthErrorBody, of response: Response) -> ProviderError {
        switch error.error {
        case "temporarily_unavailable":
            return .transient(reason: error.error, retryAfter: retryAfter(response.headers) ?? .seconds(5))
        case "access_denied":
            return .accessDenied
        case "expired_token":
            return .expired
        default:
            // Both are the provider's words, and some providers quote the token they refuse.
            // Kakao adds its own `error_code` (e.g. KOE322), which says more than `error` does.
            let secrets = response.secrets + earlierSecrets
            return .rejected(
                error: ProviderText.errorCode(error.error, redacting: secrets),
                description: error.errorDescription.map { ProviderText.sanitized($0, redacting: secrets) },
                code: error.errorCode.map { ProviderText.errorCode($0, redacting: secrets) }
            )
        }
    }

    private static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        headers.first(name: "Retry-After").flatMap(Int.init).map { .seconds(max(1, min($0, 3600))) }
    }
}

/// An OAuth 2.0 error response (RFC 6749 §5.2).
struct OAuthErrorBody: Decodable {
    var error: String
    var errorDescription: String?
    /// Kakao's own error code, e.g. `KOE322` (Kakao REST API reference, "Error code").
    var errorCode: String?

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
        case errorCode = "error_code"
    }
}

/// The token endpoint's answer, read as `sesamectl import` reads an app's.
typealias TokenResponse = OAuthTokenResponse

extension TokenSet {
    /// Both tokens, for `OAuthHTTP.redacting`: the provider issued them, so what it says on any
    /// request of an operation that holds them may repeat either, whichever that request carried
    /// (fuzz-oauth found Naver's delete answer quoting the refresh token it was not sent).
    var secrets: [String] { [accessToken] + (refreshToken.map { [$0] } ?? []) }
}
