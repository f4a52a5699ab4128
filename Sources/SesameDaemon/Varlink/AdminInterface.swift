import SesameCore
import SesameProtocol
import SesameStore
import SesameVarlink

/// `io.sesame.Admin`: root-only maintenance.
struct AdminInterface: VarlinkInterface {
    let name = AdminContract.interface
    let interfaceDescription: String
    let engine: DaemonEngine
    let store: EncryptedStore

    /// The method table; every method is root's only.
    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        guard context.peer.uid == 0 else { throw VarlinkError.permissionDenied }
        guard let method = AdminContract.Method(rawValue: call.methodName) else {
            throw VarlinkError.methodNotFound(call.method)
        }
        switch method {
        case .rekey:
            let keyID = try store.rekey()
            context.logger.notice("token store re-sealed", metadata: ["key_id": "\(keyID)"])
            return try VarlinkReply(RekeyReply(keyId: keyID))
        case .stats:
            return try VarlinkReply(
                StatsReply(
                    accounts: await engine.list().count,
                    subscribers: engine.registry.subscriberCount,
                    sequence: await engine.currentSequence,
                    keyId: store.keyID
                )
            )
        }
    }
}

extension StoreError: VarlinkErrorConvertible {
    public var varlinkError: VarlinkError {
        VarlinkError(.storeFailed)
    }
}
