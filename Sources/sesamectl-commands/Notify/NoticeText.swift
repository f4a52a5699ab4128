import FoundationEssentials
import SesameCore
import SesameProtocol

/// The words of sesame-notify's notices: which account, what happened, and what to do.
struct NoticeText {
    /// The account's id, and its provider's name, as the event or the list gave them.
    var id: String
    var providerName: String
    /// The account as it is now, when it could be read (for its name and the person's).
    var account: Account?
    /// The provider, when it could be read (for whether a click can start a login).
    var provider: Provider?

    /// The action a click on the notice starts: a browser login, where the provider offers one.
    static let logIn = (key: DesktopNotice.defaultAction, label: "Log in")

    /// Whether a click can start the login: a browser login needs no terminal, where the
    /// device flow's code must be shown on one.
    var canLogInFromNotice: Bool {
        provider?.flows.contains(.authorizationCode) ?? false
    }

    /// The account's last error, unless a refresh has worked since (then it is not why a login
    /// is needed now).
    private var currentError: String? {
        guard let account, let error = account.lastError, let at = account.lastErrorAt else { return nil }
        return account.lastRefreshAt.map { $0 <= at } ?? true ? error : nil
    }

    /// The notice for `cause`; `ending` is when the refresh token ends, for `loginEnding`.
    func notice(for cause: NoticeBoard.Cause, ending: Date?) -> DesktopNotice {
        let name = (account?.name ?? id).forDisplay(limit: 60)
        let provider = providerName.forDisplay(limit: 60)
        // The provider's subject is often a number that tells a person nothing; the display
        // name, when the provider gave one, does.
        let person = account?.displayName.map { " (\($0.forDisplay(limit: 60)), \(provider))" } ?? " (\(provider))"
        let next =
            canLogInFromNotice
            ? "Click to log in again in your browser."
            : "Run `sesamectl login \(provider)` in a terminal to log in again."
        switch cause {
        case .needsLogin:
            let why = currentError.map { ": \($0.forDisplay(limit: 200))" } ?? ""
            return DesktopNotice(
                summary: "Log in to \(name) again",
                body: "Sesame can no longer refresh \(name)\(person)\(why). Programs get no token for it "
                    + "until you log in. \(next)",
                actions: canLogInFromNotice ? [Self.logIn] : [],
                urgency: .critical
            )
        case .loginEnding:
            let when = ending.map { "on \($0.formatted(.iso8601.year().month().day()))" } ?? "soon"
            return DesktopNotice(
                summary: "The login of \(name) ends \(when)",
                body: "\(name)\(person) needs a new login before then, or programs get no token for it. \(next)",
                actions: canLogInFromNotice ? [Self.logIn] : []
            )
        }
    }
}
