import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Opens the browser on a login's authorization URL without putting that URL on a command
/// line: every local user can read a process's arguments in /proc/PID/cmdline, and the URL
/// carries the login's `state`, with which another user could try to hand the listener a code
/// of their own. xdg-open is given a page in a directory only this user can enter, which sends
/// the browser on to the URL; the page is removed when the login ends.
final class BrowserOpener: Sendable {
    /// The private directory holding the page, once one was written.
    private let directory: String

    private init(directory: String) {
        self.directory = directory
    }

    deinit {
        unlink(directory + "/login.html")
        rmdir(directory)
    }

    /// Opens the browser on `url` when there is a display ($DISPLAY or $WAYLAND_DISPLAY) and
    /// xdg-open is on $PATH; nil when it was not started. Keep the result until the login has
    /// ended: the page goes with it. xdg-open's output is discarded: the browser's chatter does
    /// not belong on this screen.
    static func open(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        -> BrowserOpener?
    {
        let display = [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains { !($0 ?? "").isEmpty }
        guard display, isWebPage(url), let opener = executable("xdg-open", path: environment["PATH"] ?? ""),
            let page = writePage(leadingTo: url, under: privateBase(environment))
        else {
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: opener)
        process.arguments = [URL(fileURLWithPath: page.directory + "/login.html").absoluteString]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            return page
        } catch {
            return nil
        }
    }

    /// Whether `url` is a web page to hand to a browser: https, or http on the loopback
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

    /// $XDG_RUNTIME_DIR when it is this user's private directory (the XDG Base Directory
    /// specification: owned by the user, mode 0700), else the temporary directory: the page's
    /// own directory is private either way.
    private static func privateBase(_ environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            var status = stat()
            if lstat(runtime, &status) == 0, status.st_uid == getuid(), status.st_mode & S_IFMT == S_IFDIR,
                status.st_mode & 0o077 == 0
            {
                return runtime
            }
        }
        return "/tmp"
    }

    /// A new directory of mode 0700 under `base` holding login.html (mode 0600), which sends
    /// the browser on to `url`; nil when it cannot be written.
    private static func writePage(leadingTo url: String, under base: String) -> BrowserOpener? {
        var template = Array("\(base)/sesame-login-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap { mkdtemp($0) } }) else {
            return nil
        }
        let page = BrowserOpener(directory: String(cString: made))
        let link = BrowserPage.escaped(url)
        let html =
            "<!doctype html><meta charset=utf-8><meta name=referrer content=no-referrer>"
            + "<meta http-equiv=refresh content=\"0;url=\(link)\"><title>Sesame</title>"
            + "<p><a href=\"\(link)\">Continue to the provider's login page.</a></p>\n"
        let descriptor = Glibc.open(page.directory + "/login.html", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let bytes = Array(html.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        return written == bytes.count ? page : nil
    }

    /// The first executable file called `name` in the directories of `path`.
    private static func executable(_ name: String, path: String) -> String? {
        path.split(separator: ":").lazy.map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}
