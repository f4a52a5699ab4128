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
}
