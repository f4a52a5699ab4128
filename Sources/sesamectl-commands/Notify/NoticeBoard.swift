import FoundationEssentials
import SesameCore
import SesameProtocol

/// Which desktop notices sesame-notify shows: one per account and cause, posted when an event
/// or the accounts as they stand call for it, in place of the one shown before (the spec's
/// `replaces_id`), and withdrawn once the account no longer needs the person.
struct NoticeBoard {
    /// Why a notice is shown.
    enum Cause: Hashable, Sendable {
        /// The account needs a new login (`needsLogin`).
        case needsLogin
        /// The refresh token ends soon and was not renewed (`refreshTokenExpiring`).
        case loginEnding
    }

    /// One notice's place on the board.
    struct Key: Hashable, Sendable {
        var account: String
        var cause: Cause
    }

    /// One thing to do on the bus.
    enum Step: Equatable {
        /// Show `notice` for `key`, in place of any shown for it.
        case post(Key, DesktopNotice)
        /// Withdraw the notice shown for `key`.
        case withdraw(Key, id: UInt32)
    }

    /// How long before a refresh token ends a login is said to end soon, for accounts found so
    /// at start (sesamed's own warning, `[sessions] refresh_token_warning`, has this default).
    static let loginEndingWarning: TimeInterval = 7 * 86400

    /// The notices shown, by key: the ids the server gave them.
    private(set) var shown: [Key: UInt32] = [:]

    /// What `event` calls for; `account` is the account as it is now (for its name), when it
    /// could be had, and `provider` its provider (for how a login can be started). A needed
    /// login replaces the notice that the login ends; a new login, or a refresh that brought a
    /// refresh token ending later than the warning, withdraws what no longer holds.
    func steps(for event: AuthEvent, account: Account?, provider: Provider?) -> [Step] {
        switch event.kind {
        case .needsLogin:
            let post = post(.needsLogin, event.account, at: event.provider, account, provider, ending: nil)
            return [post] + withdrawals(of: event.account, [.loginEnding])
        case .refreshTokenExpiring:
            let ending = event.refreshTokenExpiresAt
            return [post(.loginEnding, event.account, at: event.provider, account, provider, ending: ending)]
        case .loggedOut, .accountRemoved:
            return withdrawals(of: event.account, [.needsLogin, .loginEnding])
        case .loggedIn, .tokenRefreshed:
            let ending = event.refreshTokenExpiresAt.map { $0.timeIntervalSince(event.time) < Self.loginEndingWarning }
            return withdrawals(of: event.account, ending == true ? [.needsLogin] : [.needsLogin, .loginEnding])
        case .expiring, .expired, .refreshFailed:
            return []
        }
    }

    /// What the accounts as they are call for: at start, and after sesame-notify lost sesamed.
    func steps(reconciling accounts: [Account], providers: [Provider], now: Date) -> [Step] {
        var steps: [Step] = []
        var wanted: Set<Key> = []
        for account in accounts {
            let provider = providers.first { $0.name == account.provider }
            if account.state == .needsLogin {
                wanted.insert(Key(account: account.id, cause: .needsLogin))
                steps.append(post(.needsLogin, account.id, at: account.provider, account, provider, ending: nil))
            }
            if account.state.canRefresh, let end = account.refreshTokenExpiresAt,
                end.timeIntervalSince(now) < Self.loginEndingWarning
            {
                wanted.insert(Key(account: account.id, cause: .loginEnding))
                steps.append(post(.loginEnding, account.id, at: account.provider, account, provider, ending: end))
            }
        }
        for (key, id) in shown where !wanted.contains(key) {
            steps.append(.withdraw(key, id: id))
        }
        return steps
    }

    /// Notes that the notice for `key` is shown as `id`.
    mutating func show(_ key: Key, as id: UInt32) {
        shown[key] = id
    }

    /// Forgets the notice `id` (closed by the person, the server, or us); its key, if ours.
    @discardableResult
    mutating func forget(id: UInt32) -> Key? {
        guard let key = key(of: id) else { return nil }
        shown[key] = nil
        return key
    }

    /// Forgets every notice: the server that showed them is gone.
    mutating func forgetAll() {
        shown = [:]
    }

    /// The key of the notice shown as `id`.
    func key(of id: UInt32) -> Key? {
        shown.first { $0.value == id }?.key
    }

    private func withdrawals(of account: String, _ causes: [Cause]) -> [Step] {
        causes.compactMap { cause in
            let key = Key(account: account, cause: cause)
            return shown[key].map { .withdraw(key, id: $0) }
        }
    }

    private func post(
        _ cause: Cause,
        _ id: String,
        at providerName: String,
        _ account: Account?,
        _ provider: Provider?,
        ending: Date?
    ) -> Step {
        let text = NoticeText(id: id, providerName: providerName, account: account, provider: provider)
        return .post(Key(account: id, cause: cause), text.notice(for: cause, ending: ending))
    }
}
