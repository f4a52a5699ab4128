import Foundation
import SesameCore
import SesameVarlink

/// A connection to sesamed for Swift programs: typed calls and event streams over its Varlink socket.
public struct SesameClient: Sendable {
    private let connection: VarlinkClient

    /// The socket path the daemon path is at.
    public let socketPath: String

    private init(connection: VarlinkClient, socketPath: String) {
        self.connection = connection
        self.socketPath = socketPath
    }

    /// Connects to sesamed at `socketPath`, or at `defaultSocketPath()` when nil.
    public static func connect(socketPath: String? = nil) async throws -> SesameClient {
        let path = socketPath ?? defaultSocketPath()
        return SesameClient(connection: try await VarlinkClient.connect(unixSocketPath: path), socketPath: path)
    }

    /// Where sesamed listens: `$SESAME_SOCKET`; else, for a user other than root whose own
    /// (per-user) daemon is running, `$XDG_RUNTIME_DIR/sesame/io.sesame`; else the system daemon's
    /// `/run/sesame/io.sesame`.
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String
    {
        if let explicit = environment["SESAME_SOCKET"], !explicit.isEmpty { return explicit }
        if getuid() != 0, let runtime = environment["XDG_RUNTIME_DIR"] {
            let user = runtime + "/sesame/io.sesame"
            if FileManager.default.fileExists(atPath: user) { return user }
        }
        return "/run/sesame/io.sesame"
    }

    /// What the daemon says about itself and the interfaces it serves.
    public func serviceInfo() async throws -> ServiceInfo {
        try await connection.call("org.varlink.service.GetInfo").decode(ServiceInfo.self)
    }

    /// The accounts the caller may see.
    public func accounts() async throws -> [Account] {
        struct Reply: Decodable { var accounts: [Account] }
        return try await connection.call("io.sesame.Accounts.List").decode(Reply.self).accounts
    }

    /// Subscribes to events; the first element is always `.ready`, and the stream ends when the
    /// daemon closes the connection.
    public func events(accounts: [String]? = nil, kinds: [String]? = nil, since: UInt64? = nil) async throws
        -> AsyncThrowingStream<SubscriptionUpdate, any Error>
    {
        var parameters: [String: JSONValue] = [:]
        if let accounts { parameters["accounts"] = .array(accounts.map { .string($0) }) }
        if let kinds { parameters["kinds"] = .array(kinds.map { .string($0) }) }
        if let since { parameters["since"] = .int(Int64(clamping: since)) }
        let replies = try await connection.stream("io.sesame.Events.Subscribe", parameters: parameters)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await reply in replies {
                        if let update = try SubscriptionUpdate(reply) { continuation.yield(update) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Closes the connection.
    public func close() async {
        await connection.close()
    }
}

/// What `org.varlink.service.GetInfo` reports about the daemon.
public struct ServiceInfo: Sendable, Decodable, Hashable {
    /// Who makes the service.
    public var vendor: String
    /// The service's name.
    public var product: String
    /// The daemon's version.
    public var version: String
    /// Where to learn more.
    public var url: String
    /// Every interface the daemon serves.
    public var interfaces: [String]
}

/// One reply of an event subscription.
public enum SubscriptionUpdate: Sendable, Hashable {
    /// The subscription is live: every event after `sequence` will arrive.
    case ready(sequence: UInt64)

    /// Reads a reply; nil for a kind of reply this version does not know, so older clients keep
    /// working against newer daemons.
    init?(_ reply: VarlinkReplyMessage) throws {
        struct Ready: Decodable { var sequence: UInt64 }
        if let ready = reply.parameters["ready"] {
            self = .ready(sequence: try ready.decode(as: Ready.self).sequence)
        } else {
            return nil
        }
    }
}
