import FoundationEssentials
import NIOCore
import NIOHTTP1
import Synchronization

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

    fileprivate let connection: any Channel
    /// What the redirect carried.
    let outcome: Outcome

    /// Shows `page` in the browser, then closes the connection; returns once the page was sent
    /// (or the browser had gone), so that sesamectl may exit.
    func answer(_ page: BrowserPage) async {
        try? await RedirectHandler.respond(on: connection, status: .ok, page).get()
    }
}

/// What the listener's connections share: the login whose redirect is awaited, and that
/// redirect once a connection of the right user brought it.
final class RedirectInbox: Sendable {
    private struct Waiting {
        var state: String?
        var authorizationURL: String?
        var arrived: BrowserRedirect?
        var waiter: CheckedContinuation<BrowserRedirect, any Error>?
        var handedOver = false
        var cancelled = false
    }

    /// What became of a redirect brought to the inbox.
    enum Delivery {
        case handedOver, otherLogin, alreadyHandedOver
    }

    /// The uid whose sockets may hand a redirect over: the user running sesamectl.
    let owner: UInt32
    /// The path that sends the owner's browser on to the authorization URL: unguessable, so
    /// that only what sesamectl gave it to leads there.
    let startPath = "/start/" + (0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined()
    private let waiting = Mutex(Waiting())

    init(owner: UInt32) {
        self.owner = owner
    }

    /// Names the login whose redirect is to be handed over, and where its start path leads;
    /// returns that path.
    func expect(state: String, authorizationURL: String) -> String {
        waiting.withLock {
            $0.state = state
            $0.authorizationURL = authorizationURL
        }
        return startPath
    }

    /// Where the start path leads, once a login is expected.
    var authorizationURL: String? { waiting.withLock { $0.authorizationURL } }

    /// Hands `redirect` over when it is of the awaited login and the first to be.
    func deliver(_ redirect: BrowserRedirect, state: String) -> Delivery {
        let (delivery, waiter): (Delivery, CheckedContinuation<BrowserRedirect, any Error>?) = waiting.withLock {
            guard $0.state == state else { return (.otherLogin, nil) }
            guard !$0.handedOver else { return (.alreadyHandedOver, nil) }
            $0.handedOver = true
            guard let waiter = $0.waiter else {
                $0.arrived = redirect
                return (.handedOver, nil)
            }
            $0.waiter = nil
            return (.handedOver, waiter)
        }
        waiter?.resume(returning: redirect)
        return delivery
    }

    /// The redirect, once it has arrived; throws when the waiting task is cancelled.
    func arrival() async throws -> BrowserRedirect {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<BrowserRedirect, any Error>? = waiting.withLock {
                    if let arrived = $0.arrived { return .success(arrived) }
                    if $0.cancelled { return .failure(CancellationError()) }
                    $0.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let waiter = waiting.withLock { state in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

/// One browser connection: reads the request, checks whose socket sent it, and hands a
/// redirect over or answers with an error page.
final class RedirectHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart

    private let inbox: RedirectInbox
    /// Whether the connecting socket belongs to the user running sesamectl, as read at its accept.
    private let isOwners: Bool
    private var target = ""
    /// Whether this connection was answered or handed over; one that is neither by the
    /// request timeout is closed.
    private var settled = false

    init(inbox: RedirectInbox, isOwners: Bool) {
        self.inbox = inbox
        self.isOwners = isOwners
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: LoopbackListener.requestTimeout) {
            let (handler, context) = handler.value
            if !handler.settled { context.close(promise: nil) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): target = head.uri
        case .body: break  // a redirect is a GET; a body is not read
        case .end:
            guard !settled else { return }
            settled = true
            handle(on: context.channel)
        }
    }

    private func handle(on channel: any Channel) {
        guard isOwners else {
            Self.respond(on: channel, status: .forbidden, .notYours)
            return
        }
        let components = URLComponents(string: "http://127.0.0.1" + target)
        if components?.path == inbox.startPath, let authorizationURL = inbox.authorizationURL {
            Self.respond(on: channel, status: .found, .continuing, location: authorizationURL)
            return
        }
        let query = components?.percentEncodedQueryItems ?? []
        // RFC 6749 Appendix B: the redirect's parameters are form-encoded, where `+` is a space
        // ("The+user+denied+access"); a `+` of the value itself comes as %2B.
        func item(_ name: String) -> String? {
            query.first { $0.name == name }?.value.flatMap(Self.formDecoded)
        }
        let outcome: BrowserRedirect.Outcome
        if let error = item("error") {
            outcome = .refused(error, item("error_description"))
        } else if let code = item("code") {
            outcome = .code(code)
        } else {
            Self.respond(on: channel, status: .badRequest, .noCode)
            return
        }
        switch inbox.deliver(BrowserRedirect(connection: channel, outcome: outcome), state: item("state") ?? "") {
        case .handedOver: break
        case .otherLogin: Self.respond(on: channel, status: .badRequest, .otherLogin)
        case .alreadyHandedOver: Self.respond(on: channel, status: .conflict, .alreadyFinishing)
        }
    }

    /// Whether the socket at the other end of `channel` belongs to `owner`.
    static func isOwnersConnection(_ channel: any Channel, owner: UInt32) -> Bool {
        guard let peer = LoopbackPeer.Endpoint(channel.remoteAddress),
            let local = LoopbackPeer.Endpoint(channel.localAddress)
        else { return false }
        return LoopbackPeer.owner(of: peer, connectedTo: local) == owner
    }

    /// Sends one HTTP response with `page`, then closes the connection; the future completes
    /// once it is closed.
    @discardableResult
    static func respond(
        on channel: any Channel,
        status: HTTPResponseStatus,
        _ page: BrowserPage,
        location: String? = nil
    ) -> EventLoopFuture<Void> {
        let body = channel.allocator.buffer(string: page.html)
        var headers = HTTPHeaders([
            ("Content-Type", "text/html; charset=utf-8"), ("Content-Length", "\(body.readableBytes)"),
            ("Content-Security-Policy", BrowserPage.policy), ("Cache-Control", "no-store"),
            ("Referrer-Policy", "no-referrer"), ("Connection", "close"),
        ])
        if let location { headers.add(name: "Location", value: location) }
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil)
        return channel.writeAndFlush(HTTPServerResponsePart.end(nil)).flatMapError { _ in
            channel.eventLoop.makeSucceededVoidFuture()
        }
        .flatMap { channel.close() }
    }
}

extension LoopbackPeer.Endpoint {
    /// The endpoint of an IPv4 socket address; nil for any other.
    init?(_ address: SocketAddress?) {
        guard case .v4(let v4) = address else { return nil }
        self.init(address: v4.address.sin_addr.s_addr, port: UInt16(bigEndian: v4.address.sin_port))
    }
}

extension RedirectHandler {
    /// A form-encoded value decoded (`+` is a space, %XX a byte); nil when an escape is broken
    /// or the bytes are not UTF-8.
    static func formDecoded(_ value: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = value.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
