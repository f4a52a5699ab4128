import SesameCore

/// The pages sesamectl shows: how a browser login ended, and what the listener answers a request
/// that finishes no login. Everything quoted from elsewhere is cut with `forDisplay(limit:)`.
extension BrowserPage {
    /// The page of a login that ended with `account` logged in.
    static func loggedIn(_ account: Account) -> BrowserPage {
        BrowserPage(
            kind: .done,
            heading: "Logged in",
            lines: [
                .text("You are logged in as \(Formatting.name(of: account))."),
                .fact("Provider", account.provider.forDisplay(limit: 100)),
                .fact("Account", account.id.forDisplay(limit: 100)),
                .text("You can close this tab and return to the terminal."),
            ]
        )
    }

    /// The page of a login `provider` refused with its `error` and `description` (RFC 6749
    /// §4.1.2.1), decoded from the redirect.
    static func refused(by provider: String, error: String, description: String?) -> BrowserPage {
        var facts: [Line] = [
            .fact("Provider", provider.forDisplay(limit: 100)),
            .fact("Error", error.forDisplay(limit: 100)),
        ]
        if let description { facts.append(.fact("Details", description.forDisplay(limit: 300))) }
        return BrowserPage(
            kind: .failed,
            heading: "Login failed",
            lines: [.text("The provider refused the login; no account was added.")] + facts + tryAgain(provider)
        )
    }

    /// The page of a login `provider` approved but sesamed could not finish, because `reason`.
    static func failed(at provider: String, _ reason: String) -> BrowserPage {
        BrowserPage(
            kind: .failed,
            heading: "Login failed",
            lines: [
                .text("sesamed could not finish the login; no account was added."),
                .fact("Provider", provider.forDisplay(limit: 100)),
                .fact("Reason", reason.forDisplay(limit: 300)),
            ] + tryAgain(provider)
        )
    }

    /// What to do after a failed login with `provider`.
    private static func tryAgain(_ provider: String) -> [Line] {
        [
            .text("To try again, run this in the terminal:"),
            .command("sesamectl login \(provider.forDisplay(limit: 100))"),
        ]
    }

    /// The answer to another user's browser, which may not finish this login.
    static let notYours = BrowserPage(
        kind: .failed,
        heading: "Not your login",
        lines: [
            .text("This login was started by another user of this machine; only they can finish it."),
            .text("No account was added. To log in yourself, run sesamectl login in a terminal of your own."),
        ]
    )

    /// The start address's answer, which sends the browser on to the provider.
    static let continuing = BrowserPage(
        kind: .notice,
        heading: "Continuing to the provider",
        lines: [.text("Your browser is being sent to the provider's login page.")]
    )

    /// The answer to a request that carries neither a code nor the provider's error.
    static let noCode = BrowserPage(
        kind: .failed,
        heading: "No login here",
        lines: [
            .text("This address was opened without the code the provider sends back, so it finishes no login."),
            .text("sesamectl is still waiting: open the URL the terminal shows to log in."),
        ]
    )

    /// The answer to a redirect of a login other than the one sesamectl waits for.
    static let otherLogin = BrowserPage(
        kind: .failed,
        heading: "Not this login",
        lines: [
            .text("This page belongs to another login than the one sesamectl is waiting for, so it was ignored."),
            .text("sesamectl is still waiting: open the URL the terminal shows now to log in."),
        ]
    )

    /// The answer to a second redirect of the login, once the first is being finished.
    static let alreadyFinishing = BrowserPage(
        kind: .notice,
        heading: "Already finishing",
        lines: [
            .text("This login is already being completed; the terminal shows how it ends."),
            .text("You can close this tab."),
        ]
    )
}
