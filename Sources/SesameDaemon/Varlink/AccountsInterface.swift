import SesameCore
import SesameVarlink

/// `io.sesame.Accounts`: what programs and `sesamectl` ask about and do with accounts.
struct AccountsInterface: VarlinkInterface {
    let name = "io.sesame.Accounts"
    let interfaceDescription: String
    let directory: AccountDirectory

    private struct ListReply: Encodable {
        var accounts: [Account]
    }

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        switch call.methodName {
        case "List":
            return try VarlinkReply(ListReply(accounts: await directory.list()))
        default:
            throw VarlinkError.methodNotFound(call.method)
        }
    }
}
