import NIOPosix
import SesameCore
import SesameProtocol
import SesameStore
import SesameVarlink
import SesameWire

/// `io.sesame.Admin`: root-only maintenance.
struct AdminInterface: VarlinkInterface {
    let name = AdminContract.interface
    let interfaceDescription: String
    let engine: DaemonEngine
    let store: EncryptedStore

    /// The method table; every method is root's only.
    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.on(AdminContract.rekey) { _, context in
            guard context.peer.uid == 0 else { throw VarlinkError.permissionDenied }
            // Re-sealing writes and syncs the whole store: on NIO's pool for blocking work, not
            // on a thread of the task pool.
            let keyID = try await NIOThreadPool.singleton.runIfActive { try store.rekey() }
            context.logger.notice("token store re-sealed", metadata: ["key_id": "\(keyID)"])
            return RekeyReply(keyId: keyID)
        }
        methods.on(AdminContract.stats) { _, context in
            guard context.peer.uid == 0 else { throw VarlinkError.permissionDenied }
            return StatsReply(
                accounts: await engine.list().count,
                subscribers: engine.registry.subscriberCount,
                sequence: await engine.currentSequence,
                keyId: store.keyID
            )
        }
        return methods
    }
}

extension StoreError: VarlinkErrorConvertible {
    public var varlinkError: VarlinkError {
        VarlinkError(.storeFailed)
    }
}
