import SesameVarlink

/// An interface that only declares errors, served so clients can read what the errors mean.
struct ErrorsOnlyInterface: VarlinkInterface {
    let name: String
    let interfaceDescription: String
    /// No methods: a call of any is `MethodNotFound`.
    var methods: VarlinkMethods { VarlinkMethods(of: name) }
}
