import CSessionBus

/// The sd-bus calls sesame-notify makes, from libsystemd loaded when it starts rather than
/// linked: every program sesamectl-commands is would otherwise load libsystemd and the
/// libraries it needs at each start, a git credential lookup among them. Each field is the C
/// function of the same name (sd_bus_…), with the prototype sd-bus.h gives it.
struct SDBus: Sendable {
    typealias Bus = OpaquePointer
    typealias Message = OpaquePointer
    typealias Text = UnsafePointer<CChar>?

    let openUser: @convention(c) (UnsafeMutablePointer<Bus?>?) -> Int32
    let flushCloseUnref: @convention(c) (Bus?) -> Bus?
    let getFD: @convention(c) (Bus?) -> Int32
    let getEvents: @convention(c) (Bus?) -> Int32
    let getTimeout: @convention(c) (Bus?, UnsafeMutablePointer<UInt64>?) -> Int32
    let process: @convention(c) (Bus?, UnsafeMutablePointer<Message?>?) -> Int32
    let matchSignal:
        @convention(c) (
            Bus?, UnsafeMutablePointer<OpaquePointer?>?, Text, Text, Text, Text, sd_bus_message_handler_t?,
            UnsafeMutableRawPointer?
        ) -> Int32
    let call:
        @convention(c) (Bus?, Message?, UInt64, UnsafeMutablePointer<sd_bus_error>?, UnsafeMutablePointer<Message?>?)
            -> Int32
    let newMethodCall: @convention(c) (Bus?, UnsafeMutablePointer<Message?>?, Text, Text, Text, Text) -> Int32
    let messageUnref: @convention(c) (Message?) -> Message?
    let isSignal: @convention(c) (Message?, Text, Text) -> Int32
    let getSender: @convention(c) (Message?) -> Text
    let appendBasic: @convention(c) (Message?, CChar, UnsafeRawPointer?) -> Int32
    let appendStrv: @convention(c) (Message?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32
    let openContainer: @convention(c) (Message?, CChar, Text) -> Int32
    let closeContainer: @convention(c) (Message?) -> Int32
    let readBasic: @convention(c) (Message?, CChar, UnsafeMutableRawPointer?) -> Int32
    let errorFree: @convention(c) (UnsafeMutablePointer<sd_bus_error>?) -> Void

    /// Loads libsystemd (never unloaded: it is used until the process ends).
    static func load() throws(NotificationBusError) -> SDBus {
        guard let library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL) else {
            throw .noSessionBus(reason: "libsystemd.so.0 cannot be loaded")
        }
        func symbol<Function>(_ name: String) throws(NotificationBusError) -> Function {
            guard let address = dlsym(library, name) else {
                throw .noSessionBus(reason: "libsystemd has no \(name)")
            }
            // Safe: `Function` is the C prototype sd-bus.h declares for `name`, and a C
            // function's address is what dlsym returns for it.
            return unsafeBitCast(address, to: Function.self)
        }
        return SDBus(
            openUser: try symbol("sd_bus_open_user"),
            flushCloseUnref: try symbol("sd_bus_flush_close_unref"),
            getFD: try symbol("sd_bus_get_fd"),
            getEvents: try symbol("sd_bus_get_events"),
            getTimeout: try symbol("sd_bus_get_timeout"),
            process: try symbol("sd_bus_process"),
            matchSignal: try symbol("sd_bus_match_signal"),
            call: try symbol("sd_bus_call"),
            newMethodCall: try symbol("sd_bus_message_new_method_call"),
            messageUnref: try symbol("sd_bus_message_unref"),
            isSignal: try symbol("sd_bus_message_is_signal"),
            getSender: try symbol("sd_bus_message_get_sender"),
            appendBasic: try symbol("sd_bus_message_append_basic"),
            appendStrv: try symbol("sd_bus_message_append_strv"),
            openContainer: try symbol("sd_bus_message_open_container"),
            closeContainer: try symbol("sd_bus_message_close_container"),
            readBasic: try symbol("sd_bus_message_read_basic"),
            errorFree: try symbol("sd_bus_error_free")
        )
    }
}
