/// `org.varlink.service`'s methods, and the parameters and reply of each.
public enum VarlinkServiceContract {
    /// The interface's name.
    public static let interface = "org.varlink.service"
    /// `GetInfo`: the service's identity and interfaces.
    public static let getInfo = VarlinkMethod<Nothing, Info>("GetInfo", of: interface)
    /// `GetInterfaceDescription`: one interface's definition.
    public static let getInterfaceDescription = VarlinkMethod<DescriptionRequest, DescriptionReply>(
        "GetInterfaceDescription",
        of: interface
    )

    /// No parameters.
    public struct Nothing: VarlinkNoParameters, Hashable {
        /// Nothing to give.
        public init() {}
    }

    /// What `GetInfo` says about the service.
    public struct Info: Sendable, Codable, Hashable {
        /// Who makes the service.
        public var vendor: String
        /// The service's name.
        public var product: String
        /// The service's version.
        public var version: String
        /// Where to learn more about the service.
        public var url: String
        /// Every interface the service serves.
        public var interfaces: [String]

        /// The service described, serving `interfaces`.
        public init(vendor: String, product: String, version: String, url: String, interfaces: [String]) {
            self.vendor = vendor
            self.product = product
            self.version = version
            self.url = url
            self.interfaces = interfaces
        }
    }

    /// `GetInterfaceDescription`'s parameters.
    public struct DescriptionRequest: Sendable, Codable, Hashable {
        /// The interface asked about.
        public var interface: String
        /// Asks about `interface`.
        public init(interface: String) { self.interface = interface }
    }

    /// `GetInterfaceDescription`'s reply.
    public struct DescriptionReply: Sendable, Codable, Hashable {
        /// The interface's definition.
        public var description: String
        /// The definition `description`.
        public init(description: String) { self.description = description }
    }
}
