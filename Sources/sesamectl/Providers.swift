import ArgumentParser
import SesameClient

/// `sesamectl providers`: the providers sesamed is configured with, and how each logs in.
struct Providers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the configured providers and their login flows.")

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Print the providers as a JSON array.")
    var json = false

    /// For shell completion: the names alone, one a line.
    @Flag(name: .long, help: .hidden)
    var names = false

    func run() async throws {
        try await reportingFailures {
            let providers = try await options.withClient { try await $0.providers() }
            if names {
                providers.map(\.name).forEach(printLine)
            } else if json {
                printLine(try Formatting.json(providers))
            } else {
                for provider in providers {
                    let flows = provider.flows.map(\.rawValue).joined(separator: ",")
                    let unavailable = provider.loginUnavailable.map { "  (cannot log in: \($0))" } ?? ""
                    printLine("\(provider.name)  \(provider.type)  \(flows)\(unavailable)")
                }
            }
        }
    }
}

extension CompletionKind {
    /// The accounts the person may see, asked of sesamed when the shell completes.
    static var accountIDs: CompletionKind { .shellCommand("sesamectl accounts --ids 2>/dev/null") }
    /// The configured providers, asked of sesamed when the shell completes.
    static var providerNames: CompletionKind { .shellCommand("sesamectl providers --names 2>/dev/null") }
}
