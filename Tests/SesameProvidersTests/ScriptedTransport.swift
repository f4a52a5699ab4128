import Foundation
import NIOCore
import NIOHTTP1
import SesameProviders
import Synchronization

/// An HTTP transport that answers from a script, per URL, and keeps every request it was sent:
/// the OAuth client's requests and answers, checked without a server.
final class ScriptedTransport: HTTPTransport {
    /// How one request is answered: a response, or a thrown transport error.
    typealias Answer = @Sendable (TransportRequest) throws -> TransportResponse

    private struct State {
        var script: [String: [Answer]] = [:]
        var sent: [TransportRequest] = []
    }

    private let state = Mutex(State())

    /// Answers requests to `url` with `answers` in turn; the last one answers any further request.
    func on(_ url: String, _ answers: Answer...) {
        state.withLock { $0.script[url, default: []] += answers }
    }

    /// Every request sent, in order.
    var requests: [TransportRequest] { state.withLock { $0.sent } }

    /// The requests sent to `url`, in order.
    func requests(to url: String) -> [TransportRequest] { requests.filter { $0.url == url } }

    func send(_ request: TransportRequest, timeout: Duration, maximumBody: Int) async throws -> TransportResponse {
        let answer = state.withLock { state -> Answer? in
            state.sent.append(request)
            guard var answers = state.script[request.url], let first = answers.first else { return nil }
            if answers.count > 1 { answers.removeFirst() }
            state.script[request.url] = answers
            return first
        }
        guard let answer else { return TransportResponse(status: .notFound) }
        let response = try answer(request)
        // What HTTPClient's `collect(upTo:)` throws for a body over the limit.
        if response.body.count > maximumBody { throw NIOTooManyBytesError(maxBytes: maximumBody) }
        return response
    }
}

/// Ready-made answers.
enum Reply {
    /// A JSON body with status 200.
    static func json(_ object: [String: any Sendable]) -> ScriptedTransport.Answer {
        json(.ok, object)
    }

    /// A JSON body with `status`.
    static func json(_ status: HTTPResponseStatus, _ object: [String: any Sendable]) -> ScriptedTransport.Answer {
        // The objects are literals of strings and numbers, which JSONSerialization always takes.
        let body = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return { _ in TransportResponse(status: status, headers: ["Content-Type": "application/json"], body: body) }
    }

    /// A body of `text`, not JSON.
    static func text(_ status: HTTPResponseStatus, _ text: String, headers: HTTPHeaders = [:])
        -> ScriptedTransport.Answer
    {
        { _ in TransportResponse(status: status, headers: headers, body: Data(text.utf8)) }
    }

    /// The transport fails with `error`.
    static func failure(_ error: any Error & Sendable) -> ScriptedTransport.Answer {
        { _ in throw error }
    }
}

extension TransportRequest {
    /// The form fields of a POST body (`application/x-www-form-urlencoded`).
    var form: [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }

    /// The user and password of HTTP Basic authentication, as sent (still form-encoded).
    var basicCredentials: (user: String, password: String)? {
        guard let value = headers.first(name: "Authorization"), value.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(value.dropFirst(6))),
            let text = String(data: decoded, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }
}
