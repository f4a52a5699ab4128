import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOHTTP1
import SesameCore

/// One HTTP request as the OAuth client sends it, its body already complete.
public struct TransportRequest: Sendable {
    /// GET or POST.
    public var method: HTTPMethod
    /// The absolute URL.
    public var url: String
    /// Every header the request carries, credentials included.
    public var headers: HTTPHeaders
    /// The body (a form for POSTs), empty for GETs.
    public var body: Data

    /// Creates a request.
    public init(method: HTTPMethod, url: String, headers: HTTPHeaders, body: Data = Data()) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// One HTTP answer, its body collected.
public struct TransportResponse: Sendable {
    /// The status code.
    public var status: HTTPResponseStatus
    /// The response headers.
    public var headers: HTTPHeaders
    /// The body, at most the size the request allowed.
    public var body: Data

    /// Creates a response.
    public init(status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Where the OAuth client's requests go: an `HTTPClient` in the daemon, a script in tests. The
/// client classifies what is thrown: `HTTPClientError`'s timeouts, `NIOTooManyBytesError` for
/// a body over the limit, a TLS failure, anything else as a provider not reached (`UnreachedProvider`).
public protocol HTTPTransport: Sendable {
    /// Sends `request` and collects at most `maximumBody` bytes of its answer within `timeout`.
    func send(_ request: TransportRequest, timeout: Duration, maximumBody: Int) async throws -> TransportResponse
}

extension HTTPClient: HTTPTransport {
    /// Sends `request` over this client's connection pool.
    public func send(_ request: TransportRequest, timeout: Duration, maximumBody: Int) async throws
        -> TransportResponse
    {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = request.method
        outgoing.headers = request.headers
        if request.method != .GET { outgoing.body = .bytes(ByteBuffer(bytes: request.body)) }
        let response = try await execute(outgoing, timeout: .nanoseconds(Int64(timeout.timeInterval * 1e9)))
        let body = try await response.body.collect(upTo: maximumBody)
        return TransportResponse(status: response.status, headers: response.headers, body: Data(body.readableBytesView))
    }
}
