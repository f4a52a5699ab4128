import ArgumentParser
import Foundation
import SesameClient
import SesameCore

/// `sesamectl login PROVIDER`: logs an account in and waits until it is done.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log an account in with a configured provider.",
        discussion: """
            With the device flow (the default for most providers), sesamectl shows where to go and \
            the code to enter, and counts down until the code expires. With --browser, sesamectl \
            listens on 127.0.0.1 for the redirect (the browser belongs to you, not to the daemon, \
            which may run as a system service) and prints the URL to open.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The provider name (a file in providers.d).")
    var provider: String

    @Flag(name: .long, help: "Use the authorization-code flow with a browser on this machine.")
    var browser = false

    @Option(name: .long, help: "Scope to ask for instead of the provider's configured ones (repeatable).")
    var scope: [String] = []

    func run() async throws {
        try await reportingFailures {
            let account =
                try await options.withClient { client in
                    browser ? try await browserLogin(client) : try await deviceLogin(client)
                }
            printLine("logged in: \(account.id) (\(account.displayName ?? account.subject))")
        }
    }

    private func deviceLogin(_ client: SesameClient) async throws -> Account {
        var countdown: Task<Void, Never>?
        defer { countdown?.cancel() }
        for try await progress in try await client.login(provider: provider, scopes: scope.isEmpty ? nil : scope) {
            switch progress {
            case .verification(let verification):
                printLine("Open \(verification.uri) and enter the code \(verification.userCode)")
                if let complete = verification.uriComplete { printLine("  (or open \(complete))") }
                countdown = Task { await Self.countDown(to: verification.expiresAt) }
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

    private func browserLogin(_ client: SesameClient) async throws -> Account {
        let listener = try LoopbackListener()
        let authorization = try await client.startBrowserLogin(
            provider: provider,
            redirectURI: listener.redirectURI,
            scopes: scope.isEmpty ? nil : scope
        )
        printLine("Open this URL in your browser to log in:")
        printLine(authorization.url)
        let code = try await listener.waitForCode(state: authorization.state, timeout: .seconds(300))
        return try await client.completeLogin(state: authorization.state, code: code)
    }
}
