import Glibc
import SesameWire

/// What a person with no providers is told to do: where sesamed reads provider files (from
/// sesamed's own answer), who may write there, and how to make sesamed read them, so that the
/// empty start leads to a login rather than from one command to another.
enum ProviderSetup {
    /// The steps, for the sesamed at `socket` that reads `directory` (nil: it did not say).
    static func steps(directory: String?, socket: String) -> String {
        guard let directory else {
            return "add a provider file to the providers directory of the sesamed at \(socket), then reload it."
        }
        let sample =
            access(directory + "/example.toml.sample", R_OK) == 0 ? " (example.toml.sample there shows every key)" : ""
        // sesamed's answer, shown escaped: the socket may be a share's, whose far end is anyone's.
        let shown = directory.forDisplay(limit: 300)
        return
            "sesamed reads providers from \(shown): add a file NAME.toml there\(sample)\(writer(of: directory)), "
            + "then \(reloadStep(for: socket)), and `sesamectl providers --check NAME` tries it."
    }

    /// Who may write `directory`, when it is not the caller: its owner; or that it is to be made
    /// first, or cannot be looked at from here.
    private static func writer(of directory: String) -> String {
        var status = stat()
        guard stat(directory, &status) == 0 else {
            let code = errno
            let reason = String(cString: strerror(code)).lowercased()
            return code == ENOENT
                ? ", making the directory first (\(reason))" : " (this user cannot look at it: \(reason))"
        }
        if access(directory, W_OK) == 0 { return "" }
        return status.st_uid == 0 ? " as root (sudo)" : " as its owner (uid \(status.st_uid))"
    }

    /// How the sesamed at `socket` is told to read its providers again (SIGHUP).
    static func reloadStep(for socket: String) -> String {
        DaemonUnit(socket: socket).systemctl("reload", "sesamed").map { "`\($0)`" } ?? "send that sesamed SIGHUP"
    }
}
