import SesameCore
import SesameVarlink

/// `io.sesame.Events`: subscriptions to changes of login sessions.
struct EventsInterface: VarlinkInterface {
    let name = "io.sesame.Events"
    let interfaceDescription: String
    let directory: AccountDirectory

    private struct SubscribeParameters: Decodable {
        var accounts: [String]?
        var kinds: [String]?
        var since: UInt64?
    }

    private struct Ready: Encodable {
        var ready: Marker
        struct Marker: Encodable { var sequence: UInt64 }
    }

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        switch call.methodName {
        case "Subscribe":
            guard call.more else { throw VarlinkError.expectedMore }
            _ = try call.decodeParameters(SubscribeParameters.self)
            try await context.send(VarlinkReply(Ready(ready: .init(sequence: await directory.currentSequence))))
            // Nothing produces events yet; the subscription stays open until the peer hangs up or
            // the daemon stops, both of which cancel this task and so end the stream's iteration.
            let (untilCancelled, keepOpen) = AsyncStream<Never>.makeStream()
            for await _ in untilCancelled {}
            keepOpen.finish()
            throw CancellationError()
        default:
            throw VarlinkError.methodNotFound(call.method)
        }
    }
}
