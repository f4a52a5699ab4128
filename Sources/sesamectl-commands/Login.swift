import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameCore
import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `sesamectl login PROVIDER`: logs an account in and waits until it is done.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Log an account in with a configured provider.",
        discussion: """
            sesamectl uses the flow the provider's file names (`flow`), unless --device or \
            --browser chooses one. With the device flow, sesamectl shows where to go and the code \
            to enter, on a terminal with a QR code of the page when the terminal is large enough, \
            and counts down until the code expires; trouble at the provider is shown as it \
            happens. With the browser (authorization code) flow, sesamectl listens on 127.0.0.1 \
            for the redirect (the browser belongs to you, not to the daemon, which may run as a \
            system service) and takes it only from connections of your own user, opens the \
            browser with xdg-open when there is a display (through an address of its own, so \
            that the URL stands on no command line), and prints the URL. Ctrl-C cancels the \
            login, in sesamed too, and exits 130.
            """
    )

    /// A flow chosen on the command line.
    enum Flow: EnumerableFlag {
        case device
        case browser

        static func help(for value: Self) -> ArgumentHelp? {
            switch value {
            case .device: "Use the device flow: enter a code shown here on any device."
            case .browser: "Use the authorization-code flow with a browser on this machine."
            }
        }
    }

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The provider name (a file in providers.d).", completion: .providerNames)
    var provider: String

    @Flag var flow: Flow?

    @Option(name: .long, help: "A name for the account, to use in place of its id (see `sesamectl rename`).")
    var name: String?

    @Option(name: .long, help: "Scope to ask for instead of the provider's configured ones (repeatable).")
    var scope: [String] = []

    @Flag(name: .long, help: "Only print the browser login's URL; do not open a browser.")
    var noBrowser = false

    @Flag(name: .long, help: "Print the account as JSON on stdout (what to do goes to stderr then).")
    var json = false

    func run() async throws {
        try await logIn(showingOn: Terminal(json ? STDERR_FILENO : STDOUT_FILENO))
    }

    /// Logs in, the screen and the outcome on `screen` (with `--json`, the account on stdout).
    /// `exec --login` shows it on stderr, so that stdout carries only the command's output.
    func logIn(showingOn screen: Terminal) async throws {
        try await reportingFailures {
            let interrupt = InterruptHandler()
            let loggedIn = try await interrupt.during {
                try await options.withClient { try await login($0, screen: screen, interrupt: interrupt) }
            }
            // On a connection of its own: the login's may still be closing its stream.
            let account = try await options.naming(loggedIn.account, as: name)
            if json {
                printLine(try Formatting.json(account))
            } else {
                screen.line("logged in: \(account.id) (\(Formatting.name(of: account)))")
            }
            // The screen is stderr with --json, so stdout still carries the account alone.
            if let replaced = Formatting.sentence(for: loggedIn.replacedGrant) { screen.line(replaced) }
            // A person at a terminal is told what to do with the session; a script is not.
            if !json, screen.isTerminal {
                let called = account.name ?? account.id
                screen.line(
                    screen.styled(
                        "next: `sesamectl token \(called)` prints its access token; "
                            + "`sesamectl exec --account \(called) -- COMMAND` runs a command with it",
                        "2"
                    )
                )
            }
        }
    }

    /// Asks for `flow` (none when no flag chose one) and follows what sesamed answers. Unless
    /// the device flow was chosen, the loopback listener is opened first, as the redirect target
    /// the browser flow needs; it costs one socket, and is closed again when sesamed starts a
    /// device login instead.
    private func login(_ client: SesameClient, screen: Terminal, interrupt: InterruptHandler) async throws
        -> LoggedIn
    {
        let info = try await providerInfo(client)
        let device = flow == .device || (flow == nil && info.defaultFlow == .device)
        var listener = device ? nil : try await LoopbackListener.open(registered: info.redirectURI)
        var line: StatusLine?
        var ticker: Task<Void, Never>?
        // Whatever ends the login, the live line is gone before anything else is printed.
        defer {
            ticker?.cancel()
            line?.stop()
        }
        let progress = try await client.login(
            provider: provider,
            flow: flow.map { $0 == .device ? .device : .authorizationCode },
            redirectURI: listener?.redirectURI,
            scopes: scope.isEmpty ? nil : scope
        )
        for try await step in progress {
            switch step {
            case .verification(let verification):
                listener = nil
                DeviceScreen.show(verification, provider: provider, on: screen)
                let status = StatusLine(
                    on: screen,
                    waiting: "waiting for approval",
                    deadline: verification.expiresAt,
                    deadlineLabel: "the code expires in"
                )
                (line, ticker) = (status, Task { await status.run() })
                interrupt.clears(status)
            case .trouble(let trouble):
                line?.set(trouble: trouble)
            case .authorization(let authorization):
                guard let listener else {
                    throw ExitError.message("sesamed started a browser login, which --device ruled out.")
                }
                let browser = BrowserLogin(client: client, provider: provider, screen: screen, openBrowser: !noBrowser)
                return try await browser.run(authorization, listener, interrupt: interrupt)
            case .done(let loggedIn):
                return loggedIn
            }
        }
        throw ExitError.message("sesamed ended the login without an answer.")
    }

    /// The provider as sesamed has it configured, when it offers a login sesamectl can drive.
    private func providerInfo(_ client: SesameClient) async throws -> ProviderInfo {
        let list = try await client.providerList()
        guard let info = list.providers.first(where: { $0.name == provider }) else {
            let names = list.providers.map(\.name).joined(separator: ", ")
            let socket = options.socket ?? SocketPaths.forClients()
            throw ExitError.message(
                "no provider named \(provider) is configured"
                    + (names.isEmpty
                        ? "; none are: " + ProviderSetup.steps(directory: list.directory, socket: socket)
                        : "; configured: \(names).")
            )
        }
        guard !info.flows.isEmpty else {
            throw ExitError.message(info.loginUnavailable ?? "\(provider) offers no login flow sesamectl can drive.")
        }
        return info
    }
}
