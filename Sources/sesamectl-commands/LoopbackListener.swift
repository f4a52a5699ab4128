import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix
import SesameProtocol
import Synchronization

/// The redirect target of an authorization-code login (RFC 8252 §7.3): an HTTP listener on
/// 127.0.0.1 with a port the kernel picks, or the port of the one redirect a provider accepts
/// (Kakao and Naver match registered redirect URIs exactly). Connections are served side by
/// side, so one left idle cannot keep the browser out, and only a connection from a socket of
/// the user running sesamectl may hand the redirect over (RFC 8252 §8.3: any local user can
/// reach a loopback port). The browser's connection is held open until the login has ended, so
/// its page can say how.
final class LoopbackListener: Sendable {
    /// How long the browser has to come back: as long as sesamed keeps the login.
    static let timeout = AccountsContract.authorizationCodeLoginLifetime
    /// How long one connection may take to send its request from when it was accepted (a
    /// browser may open a connection ahead of need and leave it idle).
    static let requestTimeout: TimeAmount = .seconds(10)
    /// Connections served at once; more are closed as they arrive (a browser opens a handful).
    static let connectionLimit = 32

    /// Where the provider sends the browser back to.
    let redirectURI: String
    private let channel: any Channel
    private let inbox: RedirectInbox

    private init(channel: any Channel, inbox: RedirectInbox, redirectURI: String) {
        self.channel = channel
        self.inbox = inbox
        self.redirectURI = redirectURI
    }

    deinit {
        channel.close(promise: nil)
    }

    /// Listens on a port the kernel picks, or on the port of `registered`
    /// (http://127.0.0.1:PORT/PATH).
    static func open(registered: String? = nil) async throws -> LoopbackListener {
        let port = try registered.map(Self.port(of:)) ?? 0
        let inbox = RedirectInbox(owner: getuid())
        // The user's own connections and everyone else's are counted apart, so that other users
        // holding connections cannot keep the browser out.
        let (own, others) = (ConnectionBudget(limit: connectionLimit), ConnectionBudget(limit: connectionLimit))
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                // The port of a login a moment ago still has connections in TIME-WAIT (this end
                // closes them); without SO_REUSEADDR no login could listen there for a minute.
                // Linux still refuses the port while another socket listens on it.
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { connection in
                    // Whose the connecting socket is, read while it is surely open (RFC 8252 §8.3).
                    let isOwners = RedirectHandler.isOwnersConnection(connection, owner: inbox.owner)
                    let connections = isOwners ? own : others
                    guard connections.take() else { return connection.close() }
                    connection.closeFuture.whenComplete { _ in connections.give() }
                    return connection.eventLoop.makeCompletedFuture {
                        let pipeline = connection.pipeline.syncOperations
                        try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false)
                        try pipeline.addHandler(RedirectHandler(inbox: inbox, isOwners: isOwners))
                    }
                }
                .bind(host: "127.0.0.1", port: Int(port)).get()
        } catch {
            let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
            throw ExitError.message("cannot listen on 127.0.0.1\(port == 0 ? "" : ":\(port)"): \(reason)")
        }
        let bound = channel.localAddress?.port ?? Int(port)
        return LoopbackListener(
            channel: channel,
            inbox: inbox,
            redirectURI: registered ?? "http://127.0.0.1:\(bound)/callback"
        )
    }

    /// The port of a registered redirect, which must be http://127.0.0.1:PORT/PATH.
    private static func port(of registered: String) throws -> UInt16 {
        guard let url = URLComponents(string: registered), let number = url.port,
            let port = UInt16(exactly: number), port != 0, url.host == "127.0.0.1"
        else {
            throw ExitError.message("the provider's redirect_uri \(registered) is not http://127.0.0.1:PORT/PATH.")
        }
        return port
    }

    /// From now on, a redirect carrying `state` is the one to hand over; call it before the
    /// browser is shown the login, so that a quick browser is not turned away. Returns the
    /// address that sends this user's browser on to `authorizationURL`: it can stand on a
    /// command line (xdg-open's, which every user can read in /proc), where the authorization
    /// URL and its `state` may not, and it answers no other user.
    func expect(state: String, authorizationURL: String) -> String {
        let start = inbox.expect(state: state, authorizationURL: authorizationURL)
        return "http://127.0.0.1:\(channel.localAddress?.port ?? 0)\(start)"
    }

    /// Waits up to `timeout` for the browser's redirect of the login `expect` named. Requests
    /// from other users, with another state, or with neither a code nor an error get an error
    /// page and are otherwise ignored.
    func waitForRedirect() async throws -> BrowserRedirect {
        try await withThrowingTaskGroup(of: BrowserRedirect.self) { group in
            group.addTask { try await self.inbox.arrival() }
            group.addTask {
                try await Task.sleep(for: Self.timeout)
                throw ExitError.message(
                    "the browser did not come back within \(Self.timeout.components.seconds / 60) minutes."
                )
            }
            defer { group.cancelAll() }
            guard let redirect = try await group.next() else { throw CancellationError() }
            return redirect
        }
    }
}

/// How many connections the listener serves at once.
final class ConnectionBudget: Sendable {
    private let open = Mutex(0)
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a connection in; false when the limit is reached.
    func take() -> Bool {
        open.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    /// Counts a closed connection out.
    func give() {
        open.withLock { $0 -= 1 }
    }
}
