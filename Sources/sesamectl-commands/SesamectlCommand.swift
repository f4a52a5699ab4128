import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameCore
import SesameProtocol
import SesameWire

/// `sesamectl`: shows and drives what sesamed does. This is sesamectl-commands, which has every
/// command; the program named sesamectl answers `token ACCOUNT` itself and runs this one in its
/// place for every other command line, so people and scripts only ever name `sesamectl`.
struct Sesamectl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sesamectl",
        abstract: "Show and control the login sessions sesamed owns.",
        discussion: """
            Exit status: 0 on success; 1 on an error sesamed reported, or any other; 3 when \
            sesamed is not running; 4 no such account; 5 the session needs a new login; 6 the \
            token expired and cannot be refreshed now; 64 a usage error. `status ACCOUNT` and \
            `exec` say more in their own help.
            """,
        version: SesameVersion.current,
        // Each command names itself: a name ArgumentParser derives from the type goes through
        // `String(describing:)`, a search of every protocol conformance in the binary per
        // command at every start (a tenth of this program's start-up CPU time).
        subcommands: [
            Status.self, Accounts.self, Providers.self, Login.self, Token.self, Exec.self, Refresh.self, Import.self,
            Logout.self,
            Remove.self, Rename.self, Watch.self, Share.self, Rekey.self,
        ]
    )
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: "The daemon's socket (default: $SESAME_SOCKET, the user daemon's, or /run/sesame/io.sesame)."
    )
    var socket: String?

    /// Connects, runs `body`, and closes the connection again.
    func withClient<T>(_ body: (SesameClient) async throws -> T) async throws -> T {
        let client = try await connect()
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch {
            await client.close()
            throw error
        }
    }

    /// As `withClient`, for a command about `account`: a session that needs a new login is
    /// reported with the command that logs it in, which needs the account's provider.
    func withClient<T>(about account: String, _ body: (SesameClient) async throws -> T) async throws -> T {
        do {
            return try await withClient(body)
        } catch let error as SesameError where error.needsLogin {
            guard let provider = try? await withClient({ try await $0.account(account) }).provider else { throw error }
            throw ExitError.needsLogin(account: account, provider: provider)
        }
    }

    /// Connects, turning "nothing listens there" into one sentence instead of an error dump.
    func connect() async throws -> SesameClient {
        do {
            return try await SesameClient.connect(socketPath: socket)
        } catch let error as SesameError {
            throw Self.explained(error)
        }
    }

    /// A failure to connect as the person is told it: nothing listens there, or it refuses them.
    static func explained(_ error: SesameError) -> any Error {
        switch error {
        case .cannotConnect(let path, _): ExitError.notRunning(path: path)
        case .accessDenied(let path): ExitError.accessDenied(path: path)
        default: error
        }
    }
}

/// How sesamectl fails: one sentence on stderr and a documented exit status.
enum ExitError: Error, CustomStringConvertible {
    case notRunning(path: String)
    case needsLogin(account: String, provider: String)
    /// An API refused the token and the provider gave no new one now.
    case noNewToken(account: String)
    case accessDenied(path: String)
    case message(String)

    var description: String {
        switch self {
        case .notRunning(let path): Self.nothingAnswers(at: path)
        case .needsLogin(let account, let provider):
            "\(account) needs a new login: run `sesamectl login \(provider)`."
        case .noNewToken(let account):
            "the provider gave \(account) no new token now; `sesamectl status --check \(account)` asks it about "
                + "the current one, and `sesamectl refresh \(account)` says why a refresh fails."
        case .accessDenied(let path):
            "permission denied on \(path): this user may not use that sesamed (its socket's mode and "
                + "group decide who may; a user's own daemon is at $XDG_RUNTIME_DIR/sesame/io.sesame)."
        case .message(let text): text
        }
    }

    /// What to say when nothing answers at `path`: how to start the sesamed whose socket it is,
    /// or that a share served there has ended.
    private static func nothingAnswers(at path: String) -> String {
        guard let start = DaemonUnit(socket: path).systemctl("start", "sesamed.socket") else {
            return "nothing answers at \(path): no sesamed runs there, or the share served there "
                + "(`sesamectl share`) has ended."
        }
        return "sesamed is not running (nothing answers at \(path)); start it with `\(start)`."
    }

    /// 3 for "the daemon is not running", as systemctl uses it for inactive units; 5 for a
    /// needed login, like `SesameError.exitCode`; 1 otherwise.
    var exitCode: Int32 {
        switch self {
        case .notRunning: 3
        case .needsLogin: 5
        case .noNewToken: 6
        case .accessDenied, .message: 1
        }
    }
}

extension AsyncParsableCommand {
    /// Runs `body`, printing failures as one line on stderr with the right exit status. For a
    /// command about an account, `account` is the caller's word for it (a name, or an id), which
    /// the sentence uses rather than the id sesamed answers with, and `socket` the one asked
    /// (`--socket`; nil for the default), which a sentence about a missing account names.
    func reportingFailures(
        about account: String? = nil,
        at socket: String? = nil,
        _ body: () async throws -> Void
    ) async throws {
        do {
            try await body()
        } catch let failure as ExitError {
            printError(failure.description)
            throw ExitCode(failure.exitCode)
        } catch let error as SesameError {
            let named = account.map { error.naming($0) } ?? error
            printError(named.sentence(askedAt: socket ?? SocketPaths.forClients()))
            throw ExitCode(error.exitCode)
        }
    }
}

extension SesameError {
    /// The same error about the account the caller called `asked`, named so rather than by its
    /// id (sesamed's errors name the account by id, whatever the caller called it).
    func naming(_ asked: String) -> SesameError {
        switch self {
        case .session(.noSuchAccount): .session(.noSuchAccount(asked))
        case .session(.needsLogin): .session(.needsLogin(asked))
        case .session(.tokenExpired): .session(.tokenExpired(asked))
        case .session(.refreshFailed(_, let reason)): .session(.refreshFailed(account: asked, reason: reason))
        default: self
        }
    }

    /// `sentence`, and for a missing account asked of a sesamed other than the system's (a
    /// user's own, or a share), which one answered: the system's may hold the account.
    func sentence(askedAt socket: String) -> String {
        guard case .session(.noSuchAccount(let account)) = self, socket != SocketPaths.system else { return sentence }
        return "no account \(account) at \(socket), the sesamed asked; the system's sesamed may hold it: "
            + "`--socket \(SocketPaths.system)` asks that one, and `sesamectl accounts --socket \(socket)` lists "
            + "this one's."
    }

    /// What the person is told: what happened, and where it helps, what to do next.
    var sentence: String {
        switch self {
        case .session(.noSuchAccount(let id)): "no account \(id); see `sesamectl accounts`."
        case .session(.needsLogin(let id)):
            "\(id) needs a new login: run `sesamectl login` with its provider (`sesamectl status \(id)` names it)."
        case .session(.tokenExpired(let id)):
            "the access token of \(id) expired and sesamed has no new one now; "
                + "`sesamectl refresh \(id)` tries again now and says why it fails."
        case .session(.refreshFailed(let id, let reason)) where reason.hasPrefix(RefreshHold.prefix):
            // sesamed's own rule for the provider holds it: the reason says which and until when,
            // and asking again before then would not help.
            "did not refresh \(id): \(reason); it refreshes by itself then, and a token still valid "
                + "is handed out meanwhile."
        case .session(.refreshFailed(let id, let reason)):
            "could not refresh \(id) (\(reason)); `sesamectl refresh \(id)` tries again now."
        case .refused(.notShared(let method)):
            "this socket serves a share (`sesamectl share`), which does not allow \(method); "
                + "run it where the share was made."
        case .refused(.shareEnded(_, let reason)): "the share served at this socket has ended: \(reason)."
        case .disconnected:
            "the connection closed before an answer came: sesamed stopped or restarted, or, through a "
                + "share (`sesamectl share`), the share has ended."
        default: "sesamed: \(self)."
        }
    }

    /// 4: no such account; 5: the session needs a new login; 6: the token expired and cannot be
    /// refreshed now; 1: anything else. Scripts can tell "log in again" from "try later".
    var exitCode: Int32 {
        switch self {
        case .session(.noSuchAccount): 4
        case .session(.needsLogin): 5
        case .session(.tokenExpired), .session(.refreshFailed): 6
        default: 1
        }
    }
}
