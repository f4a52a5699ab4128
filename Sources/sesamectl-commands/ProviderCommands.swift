import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameProtocol
import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `sesamectl providers`: the providers sesamed is configured with, and how each logs in.
struct Providers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "providers",
        abstract: "List the configured providers and their login flows, or check their files.",
        discussion: """
            --check [NAME] checks each provider's file (or NAME's) against the provider, before \
            anyone logs in: the discovery document names the file's issuer, the signing keys and \
            every endpoint the file names or discovery gives answer, and the provider knows client_id (asked at the token endpoint \
            with a made-up refresh token, which a provider refuses as invalid_grant for a client \
            it knows and as invalid_client for one it does not; nothing is issued). Each problem \
            names the file and key to mend; the exit status is 1 when there is one. Only root (or \
            the user a per-user sesamed runs as) may check.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Print the providers as a JSON array.")
    var json = false

    @Flag(name: .long, help: "Leave out the table's header (shown on a terminal).")
    var noLegend = false

    /// For shell completion: the names alone, one a line.
    @Flag(name: .long, help: .hidden)
    var names = false

    @Flag(name: .long, help: "Check each provider's file against the provider (or NAME's alone).")
    var check = false

    @Argument(help: "With --check, the provider to check.", completion: .providerNames)
    var provider: String?

    func validate() throws {
        if provider != nil, !check { throw ValidationError("a provider name goes with --check.") }
        if check, names { throw ValidationError("--check and --names exclude each other.") }
    }

    func run() async throws {
        try await reportingFailures {
            if check { return try await ProviderCheckReport.run(provider, json: json, options: options) }
            let list = try await options.withClient { try await $0.providerList() }
            let providers = list.providers
            if names {
                providers.map(\.name).forEach(printLine)
            } else if json {
                printLine(try Formatting.json(providers))
            } else {
                let terminal = Terminal(STDOUT_FILENO)
                let rows = providers.map { provider in
                    [provider.name, provider.type, Self.login(provider), Self.note(provider)]
                }
                Formatting.table(
                    ["PROVIDER", "TYPE", "LOGIN", "NOTE"],
                    rows,
                    legend: terminal.isTerminal && !noLegend,
                    on: terminal
                )
                .map { $0.trimmingTrailingBlanks() }
                .forEach(printLine)
                // On stderr, so that a script reading the table reads the table alone.
                for notice in providers.flatMap({ $0.notices ?? [] }) {
                    printError("note: \(notice.forDisplay(limit: 300))")
                }
                if providers.isEmpty {
                    let socket = options.socket ?? SocketPaths.forClients()
                    printError("no providers yet; " + ProviderSetup.steps(directory: list.directory, socket: socket))
                }
            }
        }
    }

    /// How `sesamectl login NAME` logs in, and the other flow it offers with its option.
    static func login(_ provider: Provider) -> String {
        guard let flow = provider.defaultFlow ?? provider.flows.first else { return "-" }
        let other = provider.flows.first { $0 != flow }.map { " (or \(option($0)))" } ?? ""
        return word(flow) + other
    }

    /// Why the provider cannot be used, when it cannot.
    static func note(_ provider: Provider) -> String {
        provider.loginUnavailable.map { "cannot log in: \($0.forDisplay(limit: 200))" } ?? ""
    }

    private static func word(_ flow: LoginFlow) -> String {
        switch flow {
        case .device: "device code"
        case .authorizationCode: "browser"
        }
    }

    private static func option(_ flow: LoginFlow) -> String {
        switch flow {
        case .device: "--device"
        case .authorizationCode: "--browser"
        }
    }
}

extension String {
    /// The text without the blanks at its end (a table's empty last column leaves some).
    fileprivate func trimmingTrailingBlanks() -> String {
        String(self[..<(lastIndex { $0 != " " }.map(index(after:)) ?? startIndex)])
    }
}

extension CompletionKind {
    /// The accounts the person may see, asked of sesamed when the shell completes.
    static var accountIDs: CompletionKind { .shellCommand("sesamectl accounts --ids 2>/dev/null") }
    /// The configured providers, asked of sesamed when the shell completes.
    static var providerNames: CompletionKind { .shellCommand("sesamectl providers --names 2>/dev/null") }
}
