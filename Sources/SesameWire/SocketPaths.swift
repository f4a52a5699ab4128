import Glibc

/// Where sesamed listens by default, written once for the daemon and its clients.
public enum SocketPaths {
    /// The socket's file name inside its runtime directory.
    public static let socketName = "io.sesame"
    /// The system daemon's runtime directory.
    public static let systemRuntimeDirectory = "/run/sesame"
    /// The system daemon's socket.
    public static let system = systemRuntimeDirectory + "/" + socketName

    /// A user's daemon's runtime directory under their `$XDG_RUNTIME_DIR`.
    public static func userRuntimeDirectory(xdgRuntimeDirectory: String) -> String {
        xdgRuntimeDirectory + "/sesame"
    }

    /// A user's daemon's socket under their `$XDG_RUNTIME_DIR`.
    public static func user(xdgRuntimeDirectory: String) -> String {
        userRuntimeDirectory(xdgRuntimeDirectory: xdgRuntimeDirectory) + "/" + socketName
    }

    /// Where a client finds sesamed: `$SESAME_SOCKET`; else, for a user other than root whose own
    /// (per-user) daemon is running, `$XDG_RUNTIME_DIR/sesame/io.sesame`; else the system daemon's
    /// `/run/sesame/io.sesame`.
    public static func forClients(environment: [String: String]) -> String {
        if let explicit = environment["SESAME_SOCKET"], !explicit.isEmpty { return explicit }
        if getuid() != 0, let runtime = environment["XDG_RUNTIME_DIR"] {
            let user = user(xdgRuntimeDirectory: runtime)
            if access(user, F_OK) == 0 { return user }
        }
        return system
    }

    /// Where a client finds sesamed, from this process's environment (`forClients(environment:)`).
    public static func forClients() -> String {
        var variables: [String: String] = [:]
        for name in ["SESAME_SOCKET", "XDG_RUNTIME_DIR"] {
            if let value = getenv(name) { variables[name] = String(cString: value) }
        }
        return forClients(environment: variables)
    }
}
