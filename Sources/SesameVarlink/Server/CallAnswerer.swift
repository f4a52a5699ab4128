import Logging
import NIOCore
import SesameWire

/// How a server answers a call it has read: from the dispatch table (`VarlinkMethods`) of the
/// interface that names it, on the spot when the method can, else by its handler; every error
/// becomes the reply the peer reads. Shared by all of a server's connections, by reference: each
/// connection and its close callback keep it, and a copy of its fields cost every connection 0.1 KiB.
final class CallAnswerer: Sendable {
    /// The interface that names the server's own errors (`InvalidMessage`, `InternalError`...).
    let protocolInterface: String
    let logger: Logger
    /// How many lines each uid's connections and messages may make sesamed log (bad messages,
    /// and at debug every connection opened and closed), across all its connections.
    private let connectionLines = PeerLogBudget(perWindow: 30)
    /// How many lines each uid's calls may (`VarlinkCallContext.logger`): logins, removals,
    /// shares, about one a second. Kept apart so that bad messages or connection churn cannot
    /// hold back the lines that say what was done to an account.
    private let callLines = PeerLogBudget(perWindow: 60)

    /// Each interface's dispatch table, `org.varlink.service`'s included, and the interfaces'
    /// names in UTF-8, in the same order: a call's is found by comparing bytes, with no string
    /// made and no table copied until it is found.
    private let tables: [VarlinkMethods]
    private let names: [[UInt8]]

    init(interfaces: [String: any VarlinkInterface], protocolInterface: String, logger: Logger) {
        self.tables = interfaces.values.map(\.methods)
        self.names = interfaces.keys.map { Array($0.utf8) }
        self.protocolInterface = protocolInterface
        self.logger = logger
    }

    /// The entry of the method `call` names.
    private func entry(of call: VarlinkCall) throws(VarlinkError) -> VarlinkMethods.Entry {
        guard let index = call.interfaceIndex(among: names) else { throw .interfaceNotFound(call.interface) }
        guard let entry = tables[index].entry(for: call) else { throw .methodNotFound(call.method) }
        return entry
    }

    /// The framed reply to `call` if its method gives it without waiting, for the connection's
    /// event loop to write at once; nil when the call must go to `answer` off the loop.
    func answerAtOnce(_ call: VarlinkCall, peer: PeerCredentials, scope: ConnectionScope) -> ByteBuffer? {
        guard !call.more else { return nil }
        let context = VarlinkCallContext(
            peer: peer,
            scope: scope,
            logger: logger,
            lineBudget: callLines,
            outbound: nil,
            call: call
        )
        do {
            if let refusal = scope.refusal(of: call.method) { throw refusal }
            guard let atOnce = try entry(of: call).atOnce, let reply = try atOnce(call, context) else { return nil }
            guard reply.continuesOn == nil else { throw MisusedStreamError() }
            return reply.frame(continues: false)
        } catch {
            return errorFrame(for: error, context: context)
        }
    }

    /// How a call answered off the loop ended.
    enum Answer {
        /// With this framed final reply.
        case reply(ByteBuffer)
        /// With nothing left to send: the call was cancelled, or the peer hung up.
        case nothing
        /// Not yet: the call goes on through this stream, without its handler.
        case continuing(VarlinkReplyStream)
    }

    /// Answers `call`, its intermediate replies sent through `outbound`.
    func answer(_ call: VarlinkCall, outbound: ReplyWriter, peer: PeerCredentials, scope: ConnectionScope) async
        -> Answer
    {
        let context = VarlinkCallContext(
            peer: peer,
            scope: scope,
            logger: logger,
            lineBudget: callLines,
            outbound: outbound,
            call: call
        )
        do {
            // Checked again off the loop: the connection's restriction may have begun or its
            // grant ended since the call was read.
            if let refusal = scope.refusal(of: call.method) { throw refusal }
            let reply = try await entry(of: call).handle(call, context)
            if let stream = reply.continuesOn {
                // Only a streaming call can go on without its handler; a stream nobody reads
                // from now on is ended here, so what waits for its end lets go.
                guard call.more else {
                    stream.cancel()
                    throw MisusedStreamError()
                }
                return .continuing(stream)
            }
            return .reply(reply.frame(continues: false))
        } catch is CancellationError {
            return .nothing
        } catch let error as ChannelError where error == .ioOnClosedChannel || error == .outputClosed {
            // The peer hung up while the call was still sending replies: how a client ends a
            // `more` call it no longer wants, not a failure.
            context.logger.debug("peer hung up during the call")
            return .nothing
        } catch {
            return .reply(errorFrame(for: error, context: context))
        }
    }

    /// The error reply for what a handler threw.
    private func errorFrame(for error: any Error, context: VarlinkCallContext) -> ByteBuffer {
        switch error {
        case let error as VarlinkError:
            context.logger.debug("call failed", metadata: ["error": "\(error.name)"])
            return error.frame()
        case let error as any VarlinkErrorConvertible:
            context.logger.debug("call failed", metadata: ["error": "\(error.varlinkError.name)"])
            return error.varlinkError.frame()
        default:
            // Unknown errors may carry anything; only their type reaches the log, never the peer.
            context.logger.error("call failed unexpectedly", metadata: ["error_type": "\(type(of: error))"])
            return VarlinkError(protocolInterface + ".InternalError").frame()
        }
    }

    /// Logs what `peer`'s connection or message caused, with its identity as metadata, within
    /// its uid's budget (`PeerLogBudget`). The metadata is made only when the level is on:
    /// setting metadata on a logger costs (a stream handler renders it at once) and most
    /// connections log nothing at the default level.
    func log(
        _ level: Logger.Level,
        _ message: @autoclosure () -> Logger.Message,
        peer: PeerCredentials,
        metadata: @autoclosure () -> Logger.Metadata = [:]
    ) {
        guard logger.logLevel <= level else { return }
        let all = peer.logMetadata.merging(metadata()) { _, given in given }
        guard let admitted = connectionLines.admit(level, from: peer.uid, metadata: all) else { return }
        logger.log(level: level, message(), metadata: admitted)
    }
}

/// A handler returned `VarlinkAnswer.continuing(on:)` for a call that cannot go on (not
/// streaming, or answered at once): a bug, answered as an internal error.
private struct MisusedStreamError: Error {}

/// Writes a call's intermediate replies to its connection from whatever thread the handler runs
/// on; while the peer is not reading (the channel over its high-water mark), each write waits
/// until it has reached the socket, so a slow peer holds up its own call and nothing else, and
/// a call cancelled in that wait closes the connection.
struct ReplyWriter: Sendable {
    let channel: any Channel

    /// Sends one framed reply; throws `ioOnClosedChannel` once the peer has gone.
    func write(_ frame: ByteBuffer) async throws {
        guard channel.isActive else { throw ChannelError.ioOnClosedChannel }
        if channel.isWritable {
            channel.writeAndFlush(frame, promise: nil)
        } else {
            do {
                // Cancelled (the peer left, the server stops) while the peer reads nothing: the
                // connection is closed, which fails the write and ends the wait.
                try await withTaskCancellationHandler {
                    try await channel.writeAndFlush(frame).get()
                } onCancel: {
                    channel.close(promise: nil)
                }
            } catch {
                // However the write failed (EPIPE, a reset, a close), the peer is gone.
                throw ChannelError.ioOnClosedChannel
            }
        }
    }
}

extension PeerCredentials {
    /// The peer's identity as log metadata.
    var logMetadata: Logger.Metadata {
        ["peer_uid": "\(uid)", "peer_pid": "\(pid)"]
    }

    /// `base` with this peer and `method` as metadata: what a call's log lines carry.
    public func logger(from base: Logger, method: String) -> Logger {
        var logger = base
        for (key, value) in logMetadata { logger[metadataKey: key] = value }
        logger[metadataKey: "method"] = "\(method)"
        return logger
    }
}
