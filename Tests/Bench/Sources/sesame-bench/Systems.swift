import Foundation

/// The three systems measured side by side.
enum SystemName: String, CaseIterable, Hashable, Sendable {
    case floor, dbus, sesame

    /// The name the table gives it.
    var title: String {
        switch self {
        case .floor: "floor"
        case .dbus: "dbus-daemon"
        case .sesame: "sesamed"
        }
    }
}

/// Where the programs the benchmark runs are.
struct Tools {
    let binDirectory: String
    let sesamed: String
    /// The minimal epoll server (bench-floor's source), as given or beside sesame-bench.
    let floor: String

    /// bench-client: Varlink load, subscribers, start-up and whole-process timing.
    var client: String { binDirectory + "/bench-client" }
    /// sesamectl, from the same build as sesamed.
    var sesamectl: String { URL(fileURLWithPath: sesamed).deletingLastPathComponent().path + "/sesamectl" }
    /// bench-dbus: the D-Bus service and clients.
    var dbus: String { binDirectory + "/bench-dbus" }
    /// dbus-daemon, from the system.
    var dbusDaemon: String { "/usr/bin/dbus-daemon" }
}

/// The sizes every system's messages have, taken from sesamed's own (bytes, without the NUL).
struct MessageSizes {
    var call = 0
    var reply = 0
    var event = 0
}

/// What a system can be asked to measure.
protocol MeasuredSystem: AnyObject {
    /// Which system this is.
    var name: SystemName { get }
    /// GetToken from `clients` connections for `seconds` (fresh: a connection per call); nil if not measured.
    func calls(clients: Int, seconds: Double, fresh: Bool) throws -> HelperOutput?
    /// `subscribers` subscribed; `events` events one at a time, then `burst` back to back.
    func fanout(subscribers: Int, events: Int, burst: Int) throws -> HelperOutput
    /// A fresh instance from exec until ready, and its idle RSS.
    func startup() throws -> HelperOutput
    /// A fresh instance, started and ready to measure (stop it afterwards).
    func fresh() throws -> any MeasuredSystem
    /// Stops what the system started.
    func stop()
}

/// The Varlink messages a NUL-framed system is sent, exactly as on the wire (without the NUL).
struct VarlinkMessages {
    let getToken: String
    let subscribe = #"{"method":"io.sesame.Events.Subscribe","parameters":{},"more":true}"#
    let trigger: String
    static let getInfo = #"{"method":"io.sesame.Varlink.GetInfo"}"#
}

/// How to start another instance of a Varlink system: its command line and where it listens.
struct Launch {
    let command: [String]
    let socket: String
}

/// Subscriber processes for the fan-out, one per core: on 2 cores, 4 processes made the floor
/// 48% slower than 2 in the same conditions (the processes then compete with the server), and
/// a floor slower than it need be flatters everything measured against it.
let subscriberProcesses = ProcessInfo.processInfo.activeProcessorCount

/// sesamed or the floor: both speak NUL-framed Varlink on a Unix socket, driven by bench-client.
final class VarlinkSystem: MeasuredSystem {
    let name: SystemName
    private let tools: Tools
    private let socket: String
    private let server: Server
    private let messages: VarlinkMessages
    private let another: Launch

    /// A system whose `server` listens at `socket`; `another` starts a fresh instance.
    init(_ name: SystemName, tools: Tools, socket: String, server: Server, messages: VarlinkMessages, another: Launch) {
        self.name = name
        self.tools = tools
        self.socket = socket
        self.server = server
        self.messages = messages
        self.another = another
    }

    func calls(clients: Int, seconds: Double, fresh: Bool) throws -> HelperOutput? {
        try call(messages.getToken, clients: clients, seconds: seconds, fresh: fresh)
    }

    /// `message` from `clients` connections, for `seconds` or `count` calls each.
    func call(_ message: String, clients: Int, seconds: Double = 0, count: Int = 0, fresh: Bool = false) throws
        -> HelperOutput
    {
        let window = count > 0 ? ["--count", "\(count)"] : ["--seconds", "\(seconds)"]
        return try Helpers.run(
            tools.client,
            [fresh ? "connect" : "calls", "--socket", socket, "--call", message, "--clients", "\(clients)"]
                + window + ["--pid", "\(server.pid)"]
        )
    }

    func fanout(subscribers: Int, events: Int, burst: Int) throws -> HelperOutput {
        try Helpers.run(
            tools.client,
            [
                "fanout", "--socket", socket, "--subscribe", messages.subscribe, "--trigger", messages.trigger,
                "--subscribers", "\(subscribers)", "--processes", "\(subscriberProcesses)", "--events", "\(events)",
                "--burst", "\(burst)", "--daemon-pid", "\(server.pid)",
            ]
        )
    }

    func startup() throws -> HelperOutput {
        try Helpers.run(tools.client, ["startup", "--notify", "--settle-ms", "1000", "--"] + another.command)
    }

    func fresh() throws -> any MeasuredSystem {
        let server = try Server(
            another.command[0],
            Array(another.command.dropFirst()),
            log: (another.socket as NSString).deletingLastPathComponent + "/fresh.log"
        )
        do {
            try Self.awaitAnswer(tools: tools, socket: another.socket)
        } catch {
            server.stop()
            throw error
        }
        return VarlinkSystem(
            name,
            tools: tools,
            socket: another.socket,
            server: server,
            messages: messages,
            another: another
        )
    }

    func stop() { server.stop() }

    /// Waits until a server at `socket` answers a call (up to `seconds`).
    static func awaitAnswer(tools: Tools, socket: String, seconds: Int = 30) throws {
        _ = try Helpers.run(
            tools.client,
            ["call", "--socket", socket, "--call", VarlinkMessages.getInfo, "--wait-ms", "\(seconds * 1000)"]
        )
    }

    /// Starts the floor in `directory`, with sesamed's message sizes.
    static func floor(tools: Tools, directory: String, sizes: MessageSizes, messages: VarlinkMessages) throws
        -> VarlinkSystem
    {
        func command(_ socket: String) -> [String] {
            [tools.floor, "--socket", socket, "--reply-bytes", "\(sizes.reply)", "--event-bytes", "\(sizes.event)"]
        }
        let socket = directory + "/floor.sock"
        let launch = command(socket)
        let server = try Server(launch[0], Array(launch.dropFirst()), log: directory + "/floor.log")
        try awaitAnswer(tools: tools, socket: socket)
        return VarlinkSystem(
            .floor,
            tools: tools,
            socket: socket,
            server: server,
            messages: messages,
            another: Launch(
                command: command(directory + "/floor-startup.sock"),
                socket: directory + "/floor-startup.sock"
            )
        )
    }
}

/// A private dbus-daemon with the libdbus service, driven by bench-dbus.
final class DBusSystem: MeasuredSystem {
    let name = SystemName.dbus
    private let tools: Tools
    private let directory: String
    private let bus: Server
    private let service: Server?
    private let address: String
    private let sizes: MessageSizes

    /// Starts a bus with the configuration `configuration` in `directory` and, unless `alone`, the service.
    init(tools: Tools, directory: String, sizes: MessageSizes, configuration: String = "bus", alone: Bool = false)
        throws
    {
        self.tools = tools
        self.directory = directory
        self.sizes = sizes
        for name in ["bus", "bus-startup"] {
            try Self.busConfiguration(listen: "\(directory)/\(name)")
                .write(toFile: "\(directory)/\(name).conf", atomically: true, encoding: .utf8)
        }
        let bus = try Server(
            tools.dbusDaemon,
            ["--config-file=\(directory)/\(configuration).conf", "--nofork", "--print-address=1"],
            log: "\(directory)/\(configuration).log",
            readable: true
        )
        do {
            address = try bus.firstLine()
            // The bus's reply carries the D-Bus equivalent of the Varlink NUL: sizes compare whole messages.
            service =
                alone
                ? nil
                : try Server(
                    tools.dbus,
                    ["service", "--address", address, "--reply-bytes", "\(sizes.reply + 1)"],
                    log: directory + "/service.log",
                    readable: true
                )
            _ = try service?.firstLine()
        } catch {
            bus.stop()
            throw error
        }
        self.bus = bus
    }

    func calls(clients: Int, seconds: Double, fresh: Bool) throws -> HelperOutput? {
        // Connecting to a bus (authentication, Hello) is not what the row compares.
        guard !fresh, let service else { return nil }
        return try Helpers.run(
            tools.dbus,
            [
                "calls", "--address", address, "--clients", "\(clients)", "--seconds", "\(seconds)",
                "--pid", "\(bus.pid)", "--pid", "\(service.pid)",
            ]
        )
    }

    func fanout(subscribers: Int, events: Int, burst: Int) throws -> HelperOutput {
        try Helpers.run(
            tools.dbus,
            [
                "fanout", "--address", address, "--subscribers", "\(subscribers)",
                "--processes", "\(subscriberProcesses)", "--events", "\(events)", "--burst", "\(burst)",
                "--daemon-pid", "\(bus.pid)", "--event-bytes", "\(sizes.event + 1)",
            ]
        )
    }

    func startup() throws -> HelperOutput {
        try Helpers.run(
            tools.client,
            [
                "startup", "--stdout", "--settle-ms", "1000", "--", tools.dbusDaemon,
                "--config-file=\(directory)/bus-startup.conf", "--nofork", "--print-address=1",
            ]
        )
    }

    func fresh() throws -> any MeasuredSystem {
        try DBusSystem(tools: tools, directory: directory, sizes: sizes, configuration: "bus-startup", alone: true)
    }

    func stop() {
        service?.stop()
        bus.stop()
    }

    /// A bus for one user listening at `listen`, with limits high enough for 10,000 connections.
    private static func busConfiguration(listen: String) -> String {
        let limits = [
            "max_incoming_bytes": 1_000_000_000, "max_outgoing_bytes": 1_000_000_000,
            "max_message_size": 100_000_000, "max_completed_connections": 100_000,
            "max_incomplete_connections": 10_000, "max_connections_per_user": 100_000,
            "max_match_rules_per_connection": 50_000, "max_replies_per_connection": 50_000,
            "max_names_per_connection": 50_000, "auth_timeout": 240_000,
        ]
        let limitLines = limits.keys.sorted().map { "  <limit name=\"\($0)\">\(limits[$0]!)</limit>" }
        return """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(listen)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            \(limitLines.joined(separator: "\n"))
            </busconfig>

            """
    }
}
