import Foundation
import SesameCore
import SesameProtocol
import Testing

@testable import sesamectl_commands

/// Which desktop notices sesame-notify shows: one per account and cause, replaced in place,
/// withdrawn once the account works again, and the words and action each carries.
struct NoticeBoardTests {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)
    private let web = Provider(
        name: "web",
        type: "oidc",
        flows: [.authorizationCode, .device],
        defaultFlow: .device,
        redirectURI: nil,
        loginUnavailable: nil
    )
    private let deviceOnly = Provider(
        name: "tv",
        type: "oidc",
        flows: [.device],
        defaultFlow: .device,
        redirectURI: nil,
        loginUnavailable: nil
    )

    private func account(_ id: String, _ state: SessionState, refreshEnds: TimeInterval? = nil) -> Account {
        var account = Account(id: id, provider: "web", ownerUID: 1000, subject: "1", state: state, createdAt: now)
        account.name = "work"
        account.displayName = "Alice <b>"
        account.refreshTokenExpiresAt = refreshEnds.map { now.addingTimeInterval($0) }
        account.lastError = "the provider refused the refresh (invalid_grant)"
        account.lastErrorAt = now
        return account
    }

    private func event(_ kind: AuthEvent.Kind, _ account: Account) -> AuthEvent {
        AuthEvent(sequence: 1, time: now, kind: kind, account: account)
    }

    @Test func aNeededLoginIsOneNoticeThatAClickLogsInFrom() throws {
        let board = NoticeBoard()
        let work = account("web-1", .needsLogin)
        let steps = board.steps(for: event(.needsLogin, work), account: work, provider: web)
        guard case .post(let key, let notice) = try #require(steps.first), steps.count == 1 else {
            Issue.record("expected one post, got \(steps)")
            return
        }
        #expect(key == NoticeBoard.Key(account: "web-1", cause: .needsLogin))
        #expect(notice.summary == "Log in to work again" && notice.urgency == .critical)
        #expect(notice.actions.map(\.key) == ["default"] && notice.actions.map(\.label) == ["Log in"])
        #expect(notice.body.contains("(invalid_grant)") && notice.body.contains("Alice <b>, web"))
        #expect(BrowserPage.escaped(notice.body).contains("Alice &lt;b&gt;"))
    }

    @Test func aProviderWithoutABrowserLoginSaysWhatToRunInstead() throws {
        var work = account("tv-1", .needsLogin)
        work.provider = "tv"
        let steps = NoticeBoard().steps(for: event(.needsLogin, work), account: work, provider: deviceOnly)
        guard case .post(_, let notice) = try #require(steps.first) else {
            Issue.record("expected a post, got \(steps)")
            return
        }
        #expect(notice.actions.isEmpty && notice.body.contains("Run `sesamectl login tv` in a terminal"))
    }

    @Test func aNeededLoginTakesTheNoticeThatTheLoginEndsDown() {
        var board = NoticeBoard()
        board.show(NoticeBoard.Key(account: "web-1", cause: .loginEnding), as: 8)
        let work = account("web-1", .needsLogin)
        let steps = board.steps(for: event(.needsLogin, work), account: work, provider: web)
        #expect(
            steps.count == 2 && steps.last == .withdraw(NoticeBoard.Key(account: "web-1", cause: .loginEnding), id: 8)
        )
    }

    @Test func anErrorOlderThanTheLastRefreshIsNotGivenAsTheReason() throws {
        var work = account("web-1", .needsLogin)
        work.lastErrorAt = now
        work.lastRefreshAt = now.addingTimeInterval(60)
        let steps = NoticeBoard().steps(for: event(.needsLogin, work), account: work, provider: web)
        guard case .post(_, let notice) = try #require(steps.first) else {
            Issue.record("expected a post, got \(steps)")
            return
        }
        #expect(!notice.body.contains("invalid_grant"))
    }

    @Test func aShownNoticeIsWithdrawnOnceTheAccountWorksAgain() {
        var board = NoticeBoard()
        board.show(NoticeBoard.Key(account: "web-1", cause: .needsLogin), as: 7)
        board.show(NoticeBoard.Key(account: "web-1", cause: .loginEnding), as: 8)
        // A refresh that kept a refresh token ending within the week keeps its notice.
        let stillEnding = account("web-1", .active, refreshEnds: 3 * 86400)
        #expect(
            board.steps(for: event(.tokenRefreshed, stillEnding), account: nil, provider: nil) == [
                .withdraw(NoticeBoard.Key(account: "web-1", cause: .needsLogin), id: 7)
            ]
        )
        let renewed = account("web-1", .active, refreshEnds: 60 * 86400)
        #expect(
            Set(board.steps(for: event(.tokenRefreshed, renewed), account: nil, provider: nil).map(\.id)) == [7, 8]
        )
        let loggedIn = board.steps(for: event(.loggedIn, account("web-1", .active)), account: nil, provider: nil)
        #expect(Set(loggedIn.map(\.id)) == [7, 8])
        #expect(board.steps(for: event(.expiring, renewed), account: nil, provider: nil).isEmpty)
        #expect(board.forget(id: 7) == NoticeBoard.Key(account: "web-1", cause: .needsLogin))
        #expect(board.forget(id: 7) == nil, "a notice closed twice is forgotten once")
    }

    @Test func theAccountsAsTheyStandAreBroughtInLineWithTheBoard() {
        var board = NoticeBoard()
        board.show(NoticeBoard.Key(account: "gone", cause: .needsLogin), as: 3)
        let accounts = [
            account("web-1", .needsLogin),
            account("web-2", .active, refreshEnds: 3 * 86400),
            account("web-3", .active, refreshEnds: 30 * 86400),
            account("web-4", .loggedOut, refreshEnds: 86400),
        ]
        let steps = board.steps(reconciling: accounts, providers: [web], now: now)
        let posted = steps.compactMap { step -> NoticeBoard.Key? in
            if case .post(let key, _) = step { key } else { nil }
        }
        #expect(
            posted == [
                NoticeBoard.Key(account: "web-1", cause: .needsLogin),
                NoticeBoard.Key(account: "web-2", cause: .loginEnding),
            ]
        )
        #expect(steps.last == .withdraw(NoticeBoard.Key(account: "gone", cause: .needsLogin), id: 3))
    }
}

extension NoticeBoard.Step {
    /// The notice a withdrawal takes down; nil for a post.
    fileprivate var id: UInt32? {
        if case .withdraw(_, let id) = self { id } else { nil }
    }
}
