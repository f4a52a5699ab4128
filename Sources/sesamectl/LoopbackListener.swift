import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The redirect target of an authorization-code login (RFC 8252 §7.3): a listening socket on
/// 127.0.0.1 with a port the kernel picks, or the port of the one redirect a provider accepts
/// (Kakao and Naver match registered redirect URIs exactly). It hands over the browser's redirect with the
/// browser's connection still open, so the page can tell how the login really ended.
final class LoopbackListener: Sendable {
    /// How long the browser has to come back.
    static let timeout: Duration = .seconds(300)
    /// How long one connection may take to send its request before the next one gets its turn
    /// (a browser may open a connection ahead of need and leave it idle).
    private static let requestTimeout: TimeInterval = 10

    private let descriptor: Int32
    /// Where the provider sends the browser back to.
    let redirectURI: String

    /// Listens on a port the kernel picks, or on the port of `registered`
    /// (http://127.0.0.1:PORT/PATH).
    init(registered: String? = nil) throws {
        var port: UInt16 = 0
        if let registered {
            guard let url = URLComponents(string: registered), let number = url.port,
                let valid = UInt16(exactly: number),
                url.host == "127.0.0.1"
            else {
                throw ExitFailure.message(
                    "the provider's redirect_uri \(registered) is not http://127.0.0.1:PORT/PATH."
                )
            }
            port = valid
        }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ExitFailure.message("cannot open a loopback socket: \(Self.errorText())") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 4) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw ExitFailure.message("cannot listen on 127.0.0.1\(port == 0 ? "" : ":\(port)"): \(Self.errorText())")
        }
        self.descriptor = descriptor
        self.redirectURI = registered ?? "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/callback"
    }

    deinit {
        close(descriptor)
    }

    /// Waits up to `timeout` for the browser's redirect of the login with `state`. A request
    /// with another state, or with neither a code nor an error, gets an error page and is ignored.
    func waitForRedirect(state: String) async throws -> BrowserRedirect {
        let deadline = Date().addingTimeInterval(Self.timeout.timeInterval)
        // Blocking socket calls run on their own thread, not on Swift's cooperative pool.
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try self.accept(state: state, deadline: deadline) })
            }
        }
    }

    private func accept(state: String, deadline: Date) throws -> BrowserRedirect {
        while true {
            guard BrowserConnection.waitUntilReadable(descriptor, deadline: deadline) else {
                throw ExitFailure.message(
                    "the browser did not come back within \(Self.timeout.components.seconds / 60) minutes."
                )
            }
            let accepted = Glibc.accept(descriptor, nil, nil)
            guard accepted >= 0 else { continue }
            let connection = BrowserConnection(accepted)
            let requestDeadline = min(deadline, Date().addingTimeInterval(Self.requestTimeout))
            guard let target = connection.readRequestTarget(deadline: requestDeadline) else { continue }
            let query = URLComponents(string: "http://127.0.0.1" + target)?.queryItems ?? []
            func item(_ name: String) -> String? { query.first { $0.name == name }?.value }
            guard item("state") == state else {
                connection.answer(
                    status: "400 Bad Request",
                    BrowserPage.html("This is not the login sesamectl waits for.")
                )
                continue
            }
            if let error = item("error") {
                return BrowserRedirect(connection: connection, outcome: .refused(error, item("error_description")))
            }
            guard let code = item("code") else {
                connection.answer(status: "400 Bad Request", BrowserPage.html("The redirect carried no code."))
                continue
            }
            return BrowserRedirect(connection: connection, outcome: .code(code))
        }
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}

/// The browser's redirect back to sesamectl, its connection held open until `answer` tells the
/// browser how the login ended.
struct BrowserRedirect: Sendable {
    /// What the provider sent back.
    enum Outcome: Sendable {
        /// The authorization code, to be exchanged by sesamed.
        case code(String)
        /// The provider's `error` and `error_description`: the login ended there.
        case refused(String, String?)
    }

    fileprivate let connection: BrowserConnection
    /// What the redirect carried.
    let outcome: Outcome

    /// Shows `page` in the browser; the connection closes when the redirect is let go.
    func answer(_ page: String) {
        connection.answer(status: "200 OK", page)
    }
}

/// One accepted connection from the browser; closed when let go.
private final class BrowserConnection: Sendable {
    private let descriptor: Int32

    init(_ descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// The target (path and query) of the request on this connection, read to the end of its
    /// header so that closing the connection later does not reset it; nil when no request line
    /// arrives by `deadline`.
    func readRequestTarget(deadline: Date) -> String? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while received.count < 16384, !Self.endsHeader(received) {
            guard Self.waitUntilReadable(descriptor, deadline: deadline) else { return nil }
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            received += chunk[..<count]
        }
        let requestLine = String(decoding: received, as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = requestLine.split(separator: " ")
        return parts.count >= 2 ? String(parts[1]) : nil
    }

    /// Sends one HTTP response with `page` and ends the sending side.
    func answer(status: String, _ page: String) {
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(page.utf8.count)\r\n"
            + "Content-Security-Policy: default-src 'none'\r\nCache-Control: no-store\r\n"
            + "Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n\(page)"
        Array(response.utf8).withUnsafeBytes { bytes in
            guard let start = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let sent = send(descriptor, start + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0, errno == EINTR { continue }
                guard sent > 0 else { return }  // the browser has gone; nobody is left to tell
                offset += sent
            }
        }
        shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Waits until `descriptor` has something to read (or a connection to accept); false once
    /// `deadline` has passed.
    static func waitUntilReadable(_ descriptor: Int32, deadline: Date) -> Bool {
        while true {
            let left = Int32(clamping: Int(max(0, deadline.timeIntervalSinceNow) * 1000))
            guard left > 0 else { return false }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, left)
            if ready > 0 { return true }
            if ready < 0, errno != EINTR { return false }
        }
    }

    private static func endsHeader(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && bytes.suffix(4).elementsEqual([13, 10, 13, 10])
    }
}
