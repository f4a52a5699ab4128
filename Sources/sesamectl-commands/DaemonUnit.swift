import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Which systemd unit serves the sesamed at a socket path, for the commands sesamectl tells a
/// person to run: the system's (`/run/sesame/io.sesame`), a user's own (`…/sesame/io.sesame`
/// under the runtime directory), or neither (a share's socket, a path given by hand).
enum DaemonUnit: Equatable {
    case system
    case user
    case none

    init(socket: String) {
        if socket == SocketPaths.system {
            self = .system
        } else if socket.hasSuffix("/sesame/" + SocketPaths.socketName) {
            self = .user
        } else {
            self = .none
        }
    }

    /// `systemctl VERB UNIT` for this daemon, with sudo for the system's when the caller is not
    /// root; nil when no unit serves it.
    func systemctl(_ verb: String, _ unit: String, asRoot: Bool = getuid() == 0) -> String? {
        switch self {
        case .system: (asRoot ? "" : "sudo ") + "systemctl \(verb) \(unit)"
        case .user: "systemctl --user \(verb) \(unit)"
        case .none: nil
        }
    }
}
