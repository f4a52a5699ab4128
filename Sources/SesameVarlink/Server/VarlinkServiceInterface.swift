import SesameWire

/// What `org.varlink.service.GetInfo` says about the service.
public struct VarlinkServiceInfo: Sendable, Codable, Hashable {
    /// Who makes the service.
    public var vendor: String
    /// The service's name.
    public var product: String
    /// The service's version.
    public var version: String
    /// Where to learn more about the service.
    public var url: String

    /// Creates the service's description.
    public init(vendor: String, product: String, version: String, url: String) {
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
    }
}

/// `org.varlink.service`, which every Varlink service provides: the service's identity and the
/// descriptions of all its interfaces, so generic clients need nothing of ours.
struct VarlinkServiceInterface: VarlinkInterface {
    let name = VarlinkServiceContract.interface
    let interfaceDescription = Self.standardDescription
    let info: VarlinkServiceInfo
    let descriptions: [String: String]

    init(info: VarlinkServiceInfo, interfaces: [any VarlinkInterface]) {
        self.info = info
        var descriptions = Dictionary(
            interfaces.map { ($0.name, $0.interfaceDescription) },
            uniquingKeysWith: { a, _ in a }
        )
        descriptions[name] = Self.standardDescription
        self.descriptions = descriptions
    }

    /// Both methods read constants: answered on the loop.
    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.onLoop(VarlinkServiceContract.getInfo) { _ in
            VarlinkServiceContract.Info(
                vendor: info.vendor,
                product: info.product,
                version: info.version,
                url: info.url,
                interfaces: descriptions.keys.sorted()
            )
        }
        methods.onLoop(VarlinkServiceContract.getInterfaceDescription) { request, _ in
            guard let description = descriptions[request.interface] else {
                throw VarlinkError.interfaceNotFound(request.interface)
            }
            return VarlinkServiceContract.DescriptionReply(description: description)
        }
        return methods
    }

    /// The interface text published by the Varlink project.
    static let standardDescription = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        error InvalidParameter (parameter: string)

        # Client is denied access
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        error ExpectedMore ()

        """
}
