import Foundation
import Logging
import SesameVarlink
import SesameWire
import Synchronization

/// Calls a `VarlinkInterface`'s method in-process, as a given peer, with typed parameters,
/// and collects what it answers: the intermediate replies of a stream and the final reply or
/// error, exactly as the server would put them on the wire (errors through
/// `VarlinkErrorConvertible`). The test seam under every handler (like NIOEmbedded for channels).
public struct InProcessCall: Sendable {
    /// The calling process.
    public var peer: PeerCredentials
    /// Where the handler's log goes.
    public var logger: Logger
    /// The connection the calls act as made on: calls through one `InProcessCall` share it.
    public var scope = ConnectionScope()

    /// A caller with `uid` (and that uid as gid).
    public init(uid: UInt32, logger: Logger = Logger(label: "in-process")) {
        self.peer = PeerCredentials(pid: 1, uid: uid, gid: uid)
        self.logger = logger
    }

    /// What a call answered.
    public struct Outcome: Sendable {
        /// The `continues` replies of a streaming call, in order.
        public var streamed: [VarlinkReply]
        /// The final reply, or the error reply the peer would get.
        public var result: Result<VarlinkReply, VarlinkError>

        /// The final reply's parameters as `type`; throws the error reply instead.
        public func reply<T: Decodable>(as type: T.Type) throws -> T {
            try result.get().decode(type)
        }

        /// The error's name, or nil when the call succeeded.
        public var errorName: String? {
            if case .failure(let error) = result { error.name } else { nil }
        }
    }

    /// Calls `method` (unqualified) of `interface` with `parameters`.
    public func call(
        _ interface: any VarlinkInterface,
        _ method: String,
        _ parameters: some Encodable = [String: String](),
        more: Bool = false
    ) async throws -> Outcome {
        let members = try JSONValue(encoding: parameters).objectValue ?? [:]
        let call = VarlinkCall(method: "\(interface.name).\(method)", parameters: members, more: more)
        let streamed = Mutex<[VarlinkReply]>([])
        let context = VarlinkCallContext(peer: peer, scope: scope, logger: logger, streaming: more) { reply in
            streamed.withLock { $0.append(reply) }
        }
        let result: Result<VarlinkReply, VarlinkError>
        do {
            // The server's own check, before the interface sees the call.
            if let refusal = scope.refusal(of: call.method) { throw refusal }
            // The interface's own dispatch table, as the server answers from: on the spot where
            // the method can, else by its handler.
            result = .success(try await interface.methods.answer(call, context: context))
        } catch let error as VarlinkError {
            result = .failure(error)
        } catch let error as any VarlinkErrorConvertible {
            result = .failure(error.varlinkError)
        }
        return Outcome(streamed: streamed.withLock { $0 }, result: result)
    }
}
