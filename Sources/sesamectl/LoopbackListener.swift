import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The redirect target of an authorization-code login (RFC 8252 §7.3): a listening socket on
/// 127.0.0.1 with a port the kernel picks, answering one browser request.
final class LoopbackListener: Sendable {
    private let descriptor: Int32
    /// Where the provider sends the browser back to.
    let redirectURI: String

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ExitFailure.message("cannot open a loopback socket: \(Self.errorText())") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 4) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw ExitFailure.message("cannot listen on 127.0.0.1: \(Self.errorText())")
        }
        self.descriptor = descriptor
        self.redirectURI = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/callback"
    }

    deinit {
        close(descriptor)
    }

    /// Waits for the browser's redirect and returns its code. A request with another state is
    /// answered with an error page and ignored; a provider error ends the login.
    func waitForCode(state: String, timeout: Duration) async throws -> String {
        // Blocking socket calls run on their own thread, not on Swift's cooperative pool.
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try self.accept(state: state, timeout: timeout) })
            }
        }
    }

    private func accept(state: String, timeout: Duration) throws -> String {
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        while true {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            guard left > 0, poll(&poller, 1, left) > 0 else {
                throw ExitFailure.message(
                    "the browser did not come back within \(timeout.components.seconds / 60) minutes."
                )
            }
            let connection = Glibc.accept(descriptor, nil, nil)
            guard connection >= 0 else { continue }
            defer { close(connection) }
            var buffer = [UInt8](repeating: 0, count: 8192)
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { continue }
            let requestLine = String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\r\n").first ?? ""
            let target = requestLine.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            let query = URLComponents(string: "http://127.0.0.1" + target)?.queryItems ?? []
            func item(_ name: String) -> String? { query.first { $0.name == name }?.value }
            guard item("state") == state else {
                respond(connection, status: "400 Bad Request", text: "This is not the login sesamectl is waiting for.")
                continue
            }
            if let error = item("error") {
                respond(connection, status: "200 OK", text: "The login failed (\(error)). You may close this tab.")
                throw ExitFailure.message("the provider refused the login: \(error).")
            }
            guard let code = item("code") else {
                respond(connection, status: "400 Bad Request", text: "The redirect carried no code.")
                continue
            }
            respond(
                connection,
                status: "200 OK",
                text: "You are logged in. You may close this tab and return to the terminal."
            )
            return code
        }
    }

    private func respond(_ connection: Int32, status: String, text: String) {
        let body = "<!doctype html><meta charset=utf-8><title>Sesame</title><p>\(text)</p>\n"
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n\(body)"
        _ = response.withCString { write(connection, $0, strlen($0)) }
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
