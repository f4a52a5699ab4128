import ArgumentParser
import Foundation
import SesameClient
import SesameCore

/// `sesamectl login PROVIDER`: logs an account in and waits until it is done.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log an account in with a configured provider.",
        discussion: """
            sesamectl uses the flow the provider's file names (`flow`), unless --device or \
            --browser chooses one. With the device flow, sesamectl shows where to go and the code \
            to enter, and counts down until the code expires. With the browser (authorization \
            code) flow, sesamectl listens on 127.0.0.1 for the redirect (the browser belongs to \
            you, not to the daemon, which may run as a system service) and prints the URL to open.
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

    @Option(name: .long, help: "Scope to ask for instead of the provider's configured ones (repeatable).")
    var scope: [String] = []

    func run() async throws {
        try await reportingFailures {
            let account = try await options.withClient { try await login($0) }
            printLine("logged in: \(account.id) (\(account.displayName ?? account.subject))")
        }
    }

    /// Asks for `flow` (none when no flag chose one) and follows what sesamed answers. Unless
    /// the device flow was chosen, the loopback listener is opened first, as the redirect target
    /// the browser flow needs; it costs one socket, and is closed again when sesamed starts a
    /// device login instead.
    private func login(_ client: SesameClient) async throws -> Account {
        let configured = try await client.providers()
        guard let info = configured.first(where: { $0.name == provider }) else {
            let names = configured.map(\.name).joined(separator: ", ")
            throw ExitFailure.message(
                "no provider named \(provider) is configured"
                    + (names.isEmpty ? " (none are; add a file to providers.d)." : "; configured: \(names).")
            )
        }
        guard !info.flows.isEmpty else {
            throw ExitFailure.message(info.loginUnavailable ?? "\(provider) offers no login flow sesamectl can drive.")
        }
        let device = flow == .device || (flow == nil && info.defaultFlow == .device)
        var listener = device ? nil : try LoopbackListener(registered: info.redirectURI)
        var countdown: Task<Void, Never>?
        defer { countdown?.cancel() }
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
                printLine("Open \(verification.uri) and enter the code \(verification.userCode)")
                if let complete = verification.uriComplete { printLine("  (or open \(complete))") }
                countdown = Task { await Self.countDown(to: verification.expiresAt) }
            case .authorization(let authorization):
                guard let listener else {
                    throw ExitFailure.message("sesamed started a browser login, which --device ruled out.")
                }
                return try await browserLogin(client, authorization, listener)
            case .done(let account):
                return account
            }
        }
        throw ExitFailure.message("sesamed ended the login without an answer.")
    }

    /// A live countdown on the terminal; nothing when output is not a terminal.
    private static func countDown(to deadline: Date) async {
        guard isatty(STDERR_FILENO) == 1 else { return }
        while !Task.isCancelled {
            let left = max(0, Int(deadline.timeIntervalSinceNow))
            Output.write(
                "\r  waiting for approval, code expires in \(left / 60):\(String(format: "%02d", left % 60)) ",
                to: STDERR_FILENO
            )
            try? await Task.sleep(for: .seconds(1))
        }
        Output.write("\r\u{1B}[K", to: STDERR_FILENO)
    }

    /// Shows the URL to open, waits for the browser to come back, has sesamed exchange the code,
    /// and only then tells the browser how it ended.
    private func browserLogin(
        _ client: SesameClient,
        _ authorization: BrowserAuthorization,
        _ listener: LoopbackListener
    ) async throws -> Account {
        let minutes = LoopbackListener.timeout.components.seconds / 60
        printLine("Open this URL in your browser to log in (waiting up to \(minutes) minutes for the browser):")
        printLine(authorization.url)
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
}
