import Dispatch
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Opens the browser for a login without putting the authorization URL on a command line:
/// every local user can read a process's arguments in /proc/PID/cmdline, and that URL carries
/// the login's `state`. xdg-open is given the loopback listener's start address instead
/// (`LoopbackListener.expect`), which sends only this user's browser on to the provider.
enum BrowserOpener {
    /// Opens `start` with xdg-open when there is a display ($DISPLAY or $WAYLAND_DISPLAY), the
    /// login's `authorizationURL` is a web page, and xdg-open is on $PATH; true when it was
    /// started. Its output is discarded: the browser's chatter does not belong on this screen.
    static func open(
        _ start: String,
        leadingTo authorizationURL: String,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Bool {
        let display = [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains { !($0 ?? "").isEmpty }
        guard display, isWebPage(authorizationURL),
            let opener = executable("xdg-open", path: environment["PATH"] ?? "")
        else {
            return false
        }
        return spawn(opener, argument: start)
    }

    /// Starts `program` with `argument` in sesamectl's own environment, its standard streams on
    /// /dev/null, every signal at its default and none blocked (sesamectl ignores SIGINT while
    /// a login runs, and a thread's mask is the caller's; a browser xdg-open starts must not
    /// inherit either), in a process group of its own; true when it was started. A thread
    /// reaps it when it ends, so no zombie is left while the login goes on.
    private static func spawn(_ program: String, argument: String) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes,
            Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)
        )
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            let mode = descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", mode, 0)
        }
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup(argument), nil]
        defer { arguments.forEach { free($0) } }
        var pid = pid_t()
        guard posix_spawn(&pid, program, &actions, &attributes, arguments, environ) == 0 else { return false }
        DispatchQueue.global().async { [pid] in _ = waitpid(pid, nil, 0) }
        return true
    }

    /// Whether `url` is a web page to send a browser to: https, or http on the loopback
    /// interface (a local identity provider). The URL comes from the provider's discovery
    /// document; a browser would follow whatever scheme it names (file:, smb:, …), so such a
    /// URL is only printed.
    static func isWebPage(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            return false
        }
        if scheme == "https" { return true }
        return scheme == "http" && ["127.0.0.1", "localhost", "[::1]", "::1"].contains(components.host ?? "")
    }

    /// The first executable file called `name` in the directories of `path`.
    private static func executable(_ name: String, path: String) -> String? {
        path.split(separator: ":").lazy.map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}
