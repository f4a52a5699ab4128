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
    /// started.
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
        // Its output is discarded: the browser's chatter does not belong on this screen.
        return ChildProcess.spawn(opener, arguments: [opener, start], quiet: true)
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
