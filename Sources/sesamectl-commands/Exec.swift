import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameCore

#if canImport(Glibc)
    import Glibc
#endif

/// `sesamectl exec --account A -- CMD…`: the "check login before action" gate.
struct Exec: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Run a command with a fresh access token in its environment, only if the session is usable.",
        discussion: """
            The token is put in the environment variable --env (SESAME_ACCESS_TOKEN by default), \
            never on a command line, where every user could read it. When the account needs a \
            new login, the command is not run: sesamectl says how to log in and exits 5 (or, with \
            --login, logs in first). Otherwise sesamectl becomes the command, so its exit status \
            is the command's own; 127 when it cannot be run.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(name: .long, help: "The account whose token the command gets.", completion: .accountIDs)
    var account: String

    @Option(name: .long, help: "The environment variable that carries the token.")
    var env = "SESAME_ACCESS_TOKEN"

    @Flag(name: .long, help: "Log the account in first when it needs a login.")
    var login = false

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the command to run after --") }
        guard Self.isVariableName(env) else { throw ValidationError("'\(env)' is not an environment variable name") }
    }

    func run() async throws {
        try await reportingFailures(about: account, at: options.socket) {
            let token = try await usableToken()
            setenv(env, token, 1)
            Self.restoreSignalsForTheCommand()
            let arguments = command.map { strdup($0) } + [nil]
            execvp(command[0], arguments)
            printError("cannot run \(command[0]): \(String(cString: strerror(errno))).")
            throw ExitCode(127)
        }
    }

    /// The account's token, after a login when it needs one and `--login` allows it.
    private func usableToken() async throws -> String {
        do {
            return try await options.withClient { try await $0.accessToken(for: account) }.accessToken
        } catch let error as SesameError where error.needsLogin {
            let provider = try await options.withClient { try await $0.account(account) }.provider
            guard login else {
                throw ExitError.needsLogin(account: account, provider: provider)
            }
            printError("\(account) needs a new login; logging in with \(provider).")
            let loginCommand = try Login.parse(loginArguments(provider: provider))
            try await loginCommand.logIn(showingOn: Terminal(STDERR_FILENO))
            return try await options.withClient { try await $0.accessToken(for: account) }.accessToken
        }
    }

    private func loginArguments(provider: String) -> [String] {
        (options.socket.map { ["--socket", $0] } ?? []) + [provider]
    }

    /// An ignored signal stays ignored across exec(2), and SwiftNIO ignores SIGPIPE for the whole
    /// process; the command gets the default disposition and no blocked signals, as from a shell
    /// (`sesamectl exec … -- yes | head` must end `yes` quietly).
    private static func restoreSignalsForTheCommand() {
        signal(SIGPIPE, SIG_DFL)
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
    }

    /// POSIX: letters, digits and underscores, not starting with a digit.
    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0))
        }
    }
}
