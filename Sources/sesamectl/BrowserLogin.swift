import Foundation
import SesameClient
import SesameCore

/// The browser half of `sesamectl login`: shows the URL (and opens the browser when there is a
/// display), waits for the browser to come back, has sesamed exchange the code, and only then
/// tells the browser how it ended.
struct BrowserLogin {
    /// The connection the login was started on.
    let client: SesameClient
    /// Where the person is told what to do.
    let screen: Terminal
    /// Whether to open the browser (there must be a display too); false with --no-browser.
    let openBrowser: Bool

    /// Runs the login `authorization` started, with the redirect arriving at `listener`.
    func run(_ authorization: BrowserAuthorization, _ listener: LoopbackListener, interrupt: InterruptHandler)
        async throws -> Account
    {
        let timeout = Int(LoopbackListener.timeout.components.seconds)
        let waiting = "waiting up to \(Terminal.countdown(timeout)) for the browser"
        if openBrowser, Self.open(authorization.url) {
            screen.line("Opened your browser; if it did not, open this URL in your browser (\(waiting)):")
        } else {
            screen.line("Open this URL in your browser to log in (\(waiting)):")
        }
        screen.line(authorization.url)
        let status = StatusLine(
            on: screen,
            waiting: "waiting for the browser",
            deadline: Date().addingTimeInterval(TimeInterval(timeout)),
            deadlineLabel: "time left"
        )
        interrupt.clears(status)
        let ticker = Task { await status.run() }
        defer {
            ticker.cancel()
            status.stop()
        }
        let redirect = try await listener.waitForRedirect(state: authorization.state)
        switch redirect.outcome {
        case .refused(let error, let description):
            var said = error.forDisplay(limit: 100)
            if let description { said += " (\(description.forDisplay(limit: 300)))" }
            redirect.answer(BrowserPage.html("The provider refused the login: \(said). You may close this tab."))
            throw ExitFailure.message("the provider refused the login: \(said).")
        case .code(let code):
            do {
                let account = try await client.completeLogin(state: authorization.state, code: code)
                redirect.answer(BrowserPage.loggedIn(account))
                return account
            } catch {
                redirect.answer(BrowserPage.failed("\(error)"))
                throw error
            }
        }
    }

    /// Opens `url` with xdg-open when there is a display ($DISPLAY or $WAYLAND_DISPLAY) and
    /// xdg-open is on $PATH; true when it was started. Its output is discarded: the browser's
    /// chatter does not belong on this screen.
    static func open(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        let display = [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains { !($0 ?? "").isEmpty }
        guard display, isWebPage(url), let opener = executable("xdg-open", path: environment["PATH"] ?? "") else {
            return false
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: opener)
        process.arguments = [url]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            return true
        } catch {
            return false
        }
    }

    /// Whether `url` is a web page to hand to a browser: https, or http on the loopback
    /// interface (a local identity provider). The URL comes from the provider's discovery
    /// document; xdg-open would launch whatever handles any other scheme (file:, smb:, …), so
    /// such a URL is only printed.
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
