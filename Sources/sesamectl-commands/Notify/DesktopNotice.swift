import CSessionBus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An open session-bus connection and the library it was opened with; used on the bus
/// thread only.
struct BusConnection {
    let sd: SDBus
    let bus: OpaquePointer
}

/// One notice as the Desktop Notifications spec's `Notify` takes it.
struct DesktopNotice: Sendable, Equatable {
    static let destination = "org.freedesktop.Notifications"
    static let objectPath = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"
    /// The action a click on the notice itself invokes (the spec's "default").
    static let defaultAction = "default"

    /// How urgent the spec's `urgency` hint says it is.
    enum Urgency: UInt8, Sendable {
        case low = 0, normal = 1, critical = 2
    }

    /// The one line a server shows first.
    var summary: String
    /// The text under it; plain text, escaped as HTML when posted, for servers that read the
    /// spec's body markup: an account's name or a reason must not open a tag or a link.
    var body: String
    /// Actions as (key, label) pairs; the default one is what a click does.
    var actions: [(key: String, label: String)] = []
    var urgency = Urgency.normal

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.summary == rhs.summary && lhs.body == rhs.body && lhs.urgency == rhs.urgency
            && lhs.actions.map(\.key) == rhs.actions.map(\.key) && lhs.actions.map(\.label) == rhs.actions.map(\.label)
    }

    /// `Notify (s app_name, u replaces_id, s app_icon, s summary, s body, as actions,
    /// a{sv} hints, i expire_timeout) -> (u id)`, never expiring by itself: a login that is
    /// needed stays needed. Returns the id, and the server's unique name on the bus, which its
    /// signals about the notice come from.
    func post(on connection: BusConnection, replacing: UInt32) throws(NotificationBusError) -> (
        id: UInt32, server: String?
    ) {
        let sd = connection.sd
        let message = try Self.call("Notify", on: connection) { message in
            var replacing = replacing
            var timeout: Int32 = 0
            var urgency = urgency.rawValue
            let flat = actions.flatMap { [$0.key, $0.label] }
            return [
                Self.append(sd, message, DBusType.string, "Sesame"),
                sd.appendBasic(message, DBusType.uint32, &replacing),
                Self.append(sd, message, DBusType.string, "dialog-password"),
                Self.append(sd, message, DBusType.string, summary),
                Self.append(sd, message, DBusType.string, BrowserPage.escaped(body)),
                Self.appendStrings(sd, message, flat),
                sd.openContainer(message, DBusType.array, "{sv}"),
                sd.openContainer(message, DBusType.dictEntry, "sv"),
                Self.append(sd, message, DBusType.string, "urgency"),
                sd.openContainer(message, DBusType.variant, "y"),
                sd.appendBasic(message, DBusType.byte, &urgency),
                sd.closeContainer(message),
                sd.closeContainer(message),
                sd.closeContainer(message),
                sd.appendBasic(message, DBusType.int32, &timeout),
            ]
        }
        defer { _ = sd.messageUnref(message) }
        var id: UInt32 = 0
        guard sd.readBasic(message, DBusType.uint32, &id) >= 0 else {
            throw .refused(name: "a reply without an id")
        }
        return (id, sd.getSender(message).map { String(cString: $0) })
    }

    /// `CloseNotification (u id)`.
    static func withdraw(_ id: UInt32, on connection: BusConnection) throws(NotificationBusError) {
        let reply = try call("CloseNotification", on: connection) { message in
            var id = id
            return [connection.sd.appendBasic(message, DBusType.uint32, &id)]
        }
        _ = connection.sd.messageUnref(reply)
    }

    /// Calls `member` of the server with the arguments `fill` appends (each step's result, all
    /// non-negative when it worked) and returns the reply, which the caller unrefs.
    private static func call(
        _ member: String,
        on connection: BusConnection,
        fill: (OpaquePointer) -> [Int32]
    ) throws(NotificationBusError) -> OpaquePointer {
        let (sd, bus) = (connection.sd, connection.bus)
        var message: OpaquePointer?
        guard sd.newMethodCall(bus, &message, destination, objectPath, interface, member) >= 0,
            let message
        else {
            throw .closed
        }
        defer { _ = sd.messageUnref(message) }
        guard fill(message).allSatisfy({ $0 >= 0 }) else { throw .refused(name: "a message sd-bus would not build") }
        var error = sd_bus_error()
        defer { sd.errorFree(&error) }
        var reply: OpaquePointer?
        // Five seconds, as a person would wait for a notice; not the bus's default 25.
        guard sd.call(bus, message, 5_000_000, &error, &reply) >= 0, let reply else {
            throw .refused(name: error.name.map { String(cString: $0) } ?? "no reply")
        }
        return reply
    }

    private static func append(_ sd: SDBus, _ message: OpaquePointer, _ type: CChar, _ text: String) -> Int32 {
        text.withCString { sd.appendBasic(message, type, $0) }
    }

    private static func appendStrings(_ sd: SDBus, _ message: OpaquePointer, _ strings: [String]) -> Int32 {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return sd.appendStrv(message, &pointers)
    }
}

/// The D-Bus type codes the notices use.
enum DBusType {
    static let byte = code("y")
    static let int32 = code("i")
    static let uint32 = code("u")
    static let string = code("s")
    static let array = code("a")
    static let dictEntry = code("e")
    static let variant = code("v")

    private static func code(_ letter: Unicode.Scalar) -> CChar {
        CChar(UInt8(ascii: letter))
    }
}
