import SesameVarlink

/// An interface that only declares errors, served so clients can read what the errors mean.
struct ErrorsOnlyInterface: VarlinkInterface {
    let name: String
    let interfaceDescription: String

    func handle(_ call: VarlinkCall, context: VarlinkCallContext) async throws -> VarlinkReply {
        throw VarlinkError.methodNotFound(call.method)
    }
}
