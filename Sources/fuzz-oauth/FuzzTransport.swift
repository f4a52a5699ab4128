import Foundation
import NIOCore
import NIOHTTP1
import SesameFuzzing
import SesameProviders
import Synchronization

/// Answers each request with the next NUL-separated part of the fuzz input: its first byte picks
/// the status, the rest is the body. When the parts run out, the provider is unreachable.
final class FuzzTransport: HTTPTransport {
    private static let statuses: [HTTPResponseStatus] = [
        .ok, .ok, .ok, .ok, .badRequest, .unauthorized, .forbidden, .tooManyRequests, .internalServerError,
        .serviceUnavailable, .found, .notFound, .created, .noContent,
    ]
    private let answers: Mutex<[[UInt8]]>

    struct Unreachable: Error {}

    init(_ input: inout FuzzInput) {
        var parts: [[UInt8]] = []
        while parts.count < 64, !input.remaining.isEmpty { parts.append(input.part(until: 0)) }
        answers = Mutex(parts)
    }

    func send(_ request: TransportRequest, timeout: Duration, maximumBody: Int) async throws -> TransportResponse {
        guard let part = answers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { throw Unreachable() }
        var input = FuzzInput(part)
        let status = Self.statuses[input.choice(Self.statuses.count)]
        let body = input.remaining
        guard body.count <= maximumBody else { throw NIOTooManyBytesError(maxBytes: maximumBody) }
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if status == .tooManyRequests || status == .serviceUnavailable { headers.add(name: "Retry-After", value: "1") }
        return TransportResponse(status: status, headers: headers, body: Data(body))
    }
}
