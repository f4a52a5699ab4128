/// An error reply: a fully qualified error name and its parameters, as it travels on the wire.
///
/// Handlers throw it to answer a call with an error; clients receive it when a call fails.
public struct VarlinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The fully qualified name, e.g. `org.varlink.service.MethodNotFound`.
    public var name: String
    /// The error's parameters; always a JSON object on the wire.
    public var parameters: [String: JSONValue]

    /// Creates an error reply with the given name and parameters.
    public init(_ name: String, parameters: [String: JSONValue] = [:]) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String {
        parameters.isEmpty ? name : "\(name) \(JSONValue.object(parameters).compactText)"
    }
}

extension VarlinkError {
    /// The interface named in a call is not served here.
    public static func interfaceNotFound(_ interface: String) -> Self {
        .init("org.varlink.service.InterfaceNotFound", parameters: ["interface": .string(interface)])
    }

    /// The interface is served but has no such method.
    public static func methodNotFound(_ method: String) -> Self {
        .init("org.varlink.service.MethodNotFound", parameters: ["method": .string(method)])
    }

    /// The method is declared in the interface but this server does not implement it.
    public static func methodNotImplemented(_ method: String) -> Self {
        .init("org.varlink.service.MethodNotImplemented", parameters: ["method": .string(method)])
    }

    /// A parameter is missing, of the wrong type, or out of range.
    public static func invalidParameter(_ parameter: String) -> Self {
        .init("org.varlink.service.InvalidParameter", parameters: ["parameter": .string(parameter)])
    }

    /// The caller is not allowed to make this call.
    public static let permissionDenied = Self("org.varlink.service.PermissionDenied")

    /// The method only works as a streaming call (`"more": true`).
    public static let expectedMore = Self("org.varlink.service.ExpectedMore")
}
