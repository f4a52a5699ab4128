import SesameCore
import SesameStore
import SesameVarlink

/// `io.sesame.Admin`: root-only maintenance.
struct AdminInterface: VarlinkInterface {
    let name = "io.sesame.Admin"
    let interfaceDescription: String
    let engine: DaemonEngine
    let store: EncryptedStore

    private struct RekeyReply: Encodable { var keyId: String }
    private struct StatsReply: Encodable {
        var accounts: Int
        var subscribers: Int
        var sequence: UInt64
        var keyId: String
    }

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        guard context.peer.uid == 0 else { throw VarlinkError.permissionDenied }
        switch call.methodName {
        case "Rekey":
            let keyID = try store.rekey()
            context.logger.notice("token store re-sealed", metadata: ["key_id": "\(keyID)"])
            return try VarlinkReply(RekeyReply(keyId: keyID))
        case "Stats":
            return try VarlinkReply(
                StatsReply(
                    accounts: await engine.list().count,
                    subscribers: engine.registry.subscriberCount,
                    sequence: await engine.currentSequence,
                    keyId: store.keyID
                )
            )
        default:
            throw VarlinkError.methodNotFound(call.method)
        }
    }
}

extension StoreError: VarlinkErrorConvertible {
    public var varlinkError: VarlinkError {
        VarlinkError("io.sesame.Accounts.StoreFailed")
    }
}
