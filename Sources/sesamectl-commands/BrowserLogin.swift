import FoundationEssentials
import SesameClient
import SesameCore

/// The browser half of `sesamectl login`: shows the URL (and opens the browser when there is a
/// display), waits for the browser to come back, has sesamed exchange the code, and only then
/// tells the browser how it ended.
struct BrowserLogin {
    /// The connection the login was started on.
    let client: SesameClient
    /// The provider logged in with, as configured (the browser's pages name it).
    let provider: String
    /// Where the person is told what to do.
    let screen: Terminal
    /// Whether to open the browser (there must be a display too); false with --no-browser.
    let openBrowser: Bool

    /// Runs the login `authorization` started, with the redirect arriving at `listener`.
    func run(_ authorization: BrowserAuthorization, _ listener: LoopbackListener, interrupt: InterruptHandler)
        async throws -> LoggedIn
    {
        let timeout = Int(LoopbackListener.timeout.components.seconds)
        let waiting = "waiting up to \(Terminal.countdown(timeout)) for the browser"
        let start = listener.expect(state: authorization.state, authorizationURL: authorization.url)
        if openBrowser, BrowserOpener.open(start, leadingTo: authorization.url) {
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
        let redirect = try await listener.waitForRedirect()
        switch redirect.outcome {
        case .refused(let error, let description):
            var said = error.forDisplay(limit: 100)
            if let description { said += " (\(description.forDisplay(limit: 300)))" }
            await redirect.answer(.refused(by: provider, error: error, description: description))
            throw ExitError.message("the provider refused the login: \(said).")
        case .code(let code):
            do {
                let loggedIn = try await client.completeLogin(state: authorization.state, code: code)
                await redirect.answer(.loggedIn(loggedIn.account))
                return loggedIn
            } catch {
                await redirect.answer(.failed(at: provider, "\(error)"))
                throw error
            }
        }
    }
}
