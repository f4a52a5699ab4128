/// One method of a Varlink interface as both ends know it: its name, the Swift types of its
/// parameters and reply, and whether a call must ask for more replies. A server registers the
/// method's handler under it (`VarlinkMethods`) and a client calls it (`VarlinkClient.call`), so
/// the two cannot disagree on the types without failing to compile; the contract tests check
/// the types against the interface file.
///
/// The types' requirements (`Codable & Sendable`) are stated where the types are used, not on
/// the type itself: the runtime then makes a method's type without looking up any conformance,
/// where it looked up four for each of the daemon's methods at every start.
public struct VarlinkMethod<Parameters, Reply>: Sendable {
    /// The interface's qualified name, e.g. `io.sesame.Accounts`.
    public let interface: String
    /// The method's own name, e.g. `GetToken`.
    public let name: String
    /// `interface.name`, as it goes on the wire.
    public let qualifiedName: String
    /// Whether the method only streams: a call without `more` is refused with `ExpectedMore`.
    public let requiresMore: Bool

    /// The method `name` of `interface`.
    public init(_ name: String, of interface: String, requiresMore: Bool = false) {
        self.interface = interface
        self.name = name
        self.qualifiedName = "\(interface).\(name)"
        self.requiresMore = requiresMore
    }
}

/// What tools and checks read of a method without knowing its types: the fuzzer, which decodes
/// every method's parameters and replies, and the test of each type against the interface file.
public protocol VarlinkMethodDescription: Sendable {
    /// The interface's qualified name.
    var interface: String { get }
    /// The method's own name.
    var name: String { get }
    /// `interface.name`.
    var qualifiedName: String { get }
    /// The type its parameters decode into.
    var parametersType: any Codable.Type { get }
    /// The type its reply decodes into.
    var replyType: any Codable.Type { get }
}

extension VarlinkMethod: VarlinkMethodDescription where Parameters: Codable, Reply: Codable {
    /// `Parameters`.
    public var parametersType: any Codable.Type { Parameters.self }
    /// `Reply`.
    public var replyType: any Codable.Type { Reply.self }
}

/// A method's parameters when it takes none: a table answers such a method without decoding
/// the call's parameters (`VarlinkMethods.onLoop`).
public protocol VarlinkNoParameters: Codable, Sendable {
    /// The one value: nothing.
    init()
}
