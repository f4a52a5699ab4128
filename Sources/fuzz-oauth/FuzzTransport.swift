import Foundation
import NIOCore
import NIOHTTP1
import SesameFuzzing
import SesameProviders
import Synchronization

/// Answers each request with the next NUL-separated part of the fuzz input: its first byte picks
/// the status, the rest is the body. When the parts run out, the provider is unreachable; asked
/// again after that, the transport also cancels the task, as the daemon cancels a login given up.
final class FuzzTransport: HTTPTransport {
    private static let statuses: [HTTPResponseStatus] = [
        .ok, .ok, .ok, .ok, .badRequest, .unauthorized, .forbidden, .tooManyRequests, .internalServerError,
        .serviceUnavailable, .found, .notFound, .created, .noContent,
    ]
    private let answers: Mutex<[[UInt8]]>
    /// Requests that found no answer left.
    private let unanswered = Mutex(0)

    struct UnreachableError: Error {}

    init(_ input: inout FuzzInput) {
        var parts: [[UInt8]] = []
        while parts.count < 64, !input.remaining.isEmpty { parts.append(input.part(until: 0)) }
        answers = Mutex(parts)
    }

    func send(_ request: TransportRequest, timeout: Duration, maximumBody: Int) async throws -> TransportResponse {
        guard let part = answers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
            // A device login polls an unreachable provider until its code expires, which the input
            // may put a year away: one poll per simulated second, every poll like the first. The
            // first unreachable poll takes the trouble path, the second the cancelled one, and
            // the cancelled wait then ends the login, so no path is lost.
            let earlier = unanswered.withLock { count in
                count += 1
                return count - 1
            }
            if earlier > 0 { withUnsafeCurrentTask { $0?.cancel() } }
            throw UnreachableError()
        }
        var input = FuzzInput(part)
        let status = Self.statuses[input.choice(Self.statuses.count)]
        let body = input.remaining
        guard body.count <= maximumBody else { throw NIOTooManyBytesError(maxBytes: maximumBody) }
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if status == .tooManyRequests || status == .serviceUnavailable { headers.add(name: "Retry-After", value: "1") }
        return TransportResponse(status: status, headers: headers, body: Data(body))
    }
}
