import AsyncHTTPClient
import FoundationEssentials
import Logging
import SesameCore
import SesameProviders
import SesameVarlink
import Synchronization

/// The configured providers by name, replaced as a whole when providers.d is reloaded; as the
/// engine's refresher it hands each account's refresh to its own provider. A login holds on to
/// the adapter it started with, so a reload never changes a login under way.
final class Providers: TokenRefresher {
    private struct Configured {
        var adapter: any ProviderAdapter
        /// Nil for an adapter given ready-made (`init(adapters:)`), which brings its own transport.
        var client: HTTPClient?
    }

    private let configured: Mutex<[String: Configured]>
    /// The provider files that did not read, as last loaded, but for those whose provider still
    /// runs with the settings read before.
    private let brokenFiles = Mutex<[ProviderFiles.Broken]>([])
    /// Every provider file that did not read when last loaded, a provider still running on one's
    /// earlier settings included: what `CheckProvider` reports of a file.
    private let unreadableFiles = Mutex<[ProviderFiles.Broken]>([])
    /// The file each configured provider came from, by provider name.
    private let sourceFiles = Mutex<[String: String]>([:])
    /// The providers directory last read.
    private let sourceDirectory = Mutex<String?>(nil)
    /// Clients of replaced providers: logins under way may still use them, so they are shut down
    /// only after `retirement`, or when the daemon stops.
    private let retired = Mutex<[HTTPClient]>([])
    private let logger: Logger
    /// The provider's rules on how often one account may be refreshed, kept before it is asked.
    private let pacer = RefreshPacer()

    init(_ loaded: ProviderFiles.Loaded, logger: Logger) {
        self.logger = logger
        configured = Mutex(Dictionary(uniqueKeysWithValues: loaded.providers.map { ($0.name, Self.make($0)) }))
        brokenFiles.withLock { $0 = loaded.broken }
        unreadableFiles.withLock { $0 = loaded.broken }
        sourceFiles.withLock { $0 = loaded.files }
        sourceDirectory.withLock { $0 = loaded.directory }
    }

    /// The provider files that did not read, as last loaded, but for those whose provider still
    /// runs with the settings read before (it is listed as configured).
    var broken: [ProviderFiles.Broken] {
        get { brokenFiles.withLock { $0 } }
        set { brokenFiles.withLock { $0 = newValue } }
    }

    /// Every provider file that did not read when last loaded.
    var unreadable: [ProviderFiles.Broken] {
        get { unreadableFiles.withLock { $0 } }
        set { unreadableFiles.withLock { $0 = newValue } }
    }

    /// The file (without `.toml`) each configured provider came from, by provider name.
    var files: [String: String] { sourceFiles.withLock { $0 } }

    /// The providers directory last read.
    var directory: String? { sourceDirectory.withLock { $0 } }

    /// The path of the file called `file` (a name without `.toml`) in the directory last read.
    func path(ofFile file: String) -> String? {
        directory.map { "\($0)/\(file).toml" }
    }

    /// Providers of ready-made adapters: the seam where handler tests put scripted providers.
    init(adapters: [any ProviderAdapter], logger: Logger) {
        self.logger = logger
        configured = Mutex(Dictionary(uniqueKeysWithValues: adapters.map { ($0.name, Configured(adapter: $0)) }))
    }

    private static func make(_ configuration: ProviderConfiguration) -> Configured {
        let client = ProviderFactory.httpClient(caFile: configuration.caFile)
        return Configured(adapter: ProviderFactory.adapter(for: configuration, transport: client), client: client)
    }

    /// The provider called `name`.
    func adapter(_ name: String) throws(VarlinkLoginError) -> any ProviderAdapter {
        guard let adapter = configured.withLock({ $0[name]?.adapter }) else { throw .noSuchProvider(name) }
        return adapter
    }

    /// The names of the configured providers, sorted.
    var names: [String] { configured.withLock { $0.keys.sorted() } }

    /// How long a caller waits for a refresh of an account of `provider`: its request timeout.
    func patience(for provider: String) -> Duration? {
        configured.withLock { $0[provider]?.adapter.configuration.requestTimeout }
    }

    /// What a reload of providers.d changed.
    struct Changes: Equatable, CustomStringConvertible {
        var added: [String] = []
        var changed: [String] = []
        var removed: [String] = []

        var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }

        var description: String {
            [("added", added), ("changed", changed), ("removed", removed)]
                .filter { !$0.1.isEmpty }
                .map { "\($0.0): \($0.1.joined(separator: ", "))" }
                .joined(separator: "; ")
        }
    }

    /// Replaces the providers with `configurations`, read from `files`: new ones are added,
    /// changed ones rebuilt, missing ones removed; unchanged ones keep their adapter (and what
    /// it has discovered).
    func reload(_ configurations: [ProviderConfiguration], files: [String: String] = [:], directory: String? = nil)
        -> Changes
    {
        sourceFiles.withLock { $0 = files }
        sourceDirectory.withLock { $0 = directory }
        let (changes, replaced) = configured.withLock { current -> (Changes, [HTTPClient]) in
            var changes = Changes()
            var replaced: [HTTPClient] = []
            var next: [String: Configured] = [:]
            for configuration in configurations {
                if let existing = current[configuration.name], existing.adapter.configuration == configuration {
                    next[configuration.name] = existing
                    continue
                }
                if let existing = current[configuration.name] {
                    changes.changed.append(configuration.name)
                    replaced += [existing.client].compactMap { $0 }
                } else {
                    changes.added.append(configuration.name)
                }
                next[configuration.name] = Self.make(configuration)
            }
            for (name, existing) in current where next[name] == nil {
                changes.removed.append(name)
                replaced += [existing.client].compactMap { $0 }
            }
            current = next
            return (changes, replaced)
        }
        retire(replaced)
        return Changes(
            added: changes.added.sorted(),
            changed: changes.changed.sorted(),
            removed: changes.removed.sorted()
        )
    }

    /// How long a replaced provider's HTTP client stays open for the logins that started with
    /// it: longer than a device code or a pending browser login lives.
    static let retirement: Duration = .seconds(1800)

    /// Keeps `clients` for logins under way, and shuts them down after `retirement`.
    private func retire(_ clients: [HTTPClient]) {
        guard !clients.isEmpty else { return }
        retired.withLock { $0 += clients }
        Task {
            try? await Task.sleep(for: Self.retirement)
            let due = self.retired.withLock { current in
                let due = current.filter { client in clients.contains { $0 === client } }
                current.removeAll { client in clients.contains { $0 === client } }
                return due
            }
            for client in due { try? await client.shutdown() }
        }
    }

    /// Hands the exchange to the account's provider, and logs what it came to (by account and
    /// what was asked for, never the token).
    func exchange(_ account: Account, accessToken: String, for narrowing: TokenNarrowing)
        async throws(NarrowingError) -> TokenSet
    {
        guard let adapter = configured.withLock({ $0[account.provider]?.adapter }) else {
            throw .failed(reason: "provider '\(account.provider)' is not configured (no file for it in providers.d)")
        }
        let metadata: Logger.Metadata = [
            "account": "\(account.id)", "provider": "\(account.provider)", "narrowing": "\(narrowing)",
        ]
        do throws(NarrowingError) {
            let tokens = try await adapter.exchange(account, accessToken: accessToken, for: narrowing)
            logger.info("token exchanged", metadata: metadata)
            return tokens
        } catch {
            logger.notice("token exchange failed", metadata: metadata.merging(["failure": "\(error)"]) { $1 })
            throw error
        }
    }

    func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        guard let adapter = configured.withLock({ $0[account.provider]?.adapter }) else {
            // The account stays; it says why it cannot refresh, and tries again slowly in case
            // the provider comes back with a reload.
            throw .transient(
                reason: "provider '\(account.provider)' is not configured (no file for it in providers.d)",
                retryAfter: .seconds(86400)
            )
        }
        if let paced = pacer.admit(account, pacing: adapter.configuration.refreshPacing, now: Date()) { throw paced }
        do throws(RefreshError) {
            return try await adapter.refresh(account, tokens: tokens)
        } catch {
            // Events say what a failure did to the session; the log says why it happened. The
            // reasons are sesamed's own words and the provider's error codes, never token material.
            let level: Logger.Level =
                switch error {
                case .paced: .debug
                case .transient, .unavailable: .notice
                case .needsLogin, .revoked, .invalidResponse: .warning
                }
            logger.log(
                level: level,
                "refresh failed",
                metadata: ["account": "\(account.id)", "provider": "\(account.provider)", "failure": "\(error)"]
            )
            throw error
        }
    }

    func revoke(_ account: Account, grant: TokenSet) async throws(RevocationError) {
        guard let adapter = configured.withLock({ $0[account.provider]?.adapter }) else {
            throw RevocationError(
                reason: "provider '\(account.provider)' is not configured (no file for it in providers.d)",
                isFinal: false
            )
        }
        guard !adapter.revocationEndsEveryGrant else {
            throw RevocationError(
                reason: "\(account.provider) would end the new login too: it revokes every grant of a person at once",
                isFinal: true
            )
        }
        let metadata: Logger.Metadata = ["account": "\(account.id)", "provider": "\(account.provider)"]
        do throws(ProviderError) {
            try await adapter.revoke(grant)
            logger.info("replaced grant revoked at the provider", metadata: metadata)
        } catch {
            let failure = Self.revocationFailure(error)
            logger.notice(
                "replaced grant not revoked",
                metadata: metadata.merging(["error": "\(failure.reason)"]) { $1 }
            )
            throw failure
        }
    }

    /// What a failed revocation means, in sesamed's words (a provider's description may quote
    /// the token, so only its error code is kept): a refusal says the grant no longer works
    /// there, which is what revoking it was for; a provider without revocation, or whose file
    /// and discovery name no revocation endpoint, never will, so the grant is let go now (the
    /// login's event says why) rather than kept for an hour of futile tries; the rest may pass.
    private static func revocationFailure(_ error: ProviderError) -> RevocationError {
        switch error {
        case .rejected(let name, _, let code):
            RevocationError(
                reason: "the provider refused it (\(name)\(code.map { ", \($0)" } ?? "")): it no longer works there",
                isFinal: true
            )
        case .unsupported: RevocationError(reason: "\(error)", isFinal: true)
        default: RevocationError(reason: "\(error)", isFinal: false)
        }
    }

    /// Closes every HTTP client, current and retired.
    func shutdown() async {
        let clients = configured.withLock { $0.values.compactMap(\.client) } + retired.withLock { $0 }
        for client in clients { try? await client.shutdown() }
    }
}
