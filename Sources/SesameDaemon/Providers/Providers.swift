import AsyncHTTPClient
import Foundation
import Logging
import SesameCore
import SesameProviders
import SesameVarlink
import Synchronization

/// The configured providers by name; as the engine's refresher it hands each account's refresh
/// to its own provider.
final class Providers: TokenRefresher {
    private let adapters: [String: any ProviderAdapter]
    private let ownedClients: [HTTPClient]
    private let logger: Logger

    init(_ configurations: [ProviderConfiguration], logger: Logger) {
        self.logger = logger
        var adapters: [String: any ProviderAdapter] = [:]
        var owned: [HTTPClient] = []
        for configuration in configurations {
            let (client, isOwned) = ProviderFactory.httpClient(caFile: configuration.caFile)
            if isOwned { owned.append(client) }
            adapters[configuration.name] = ProviderFactory.adapter(for: configuration, client: client)
        }
        self.adapters = adapters
        self.ownedClients = owned
    }

    /// The provider called `name`.
    func adapter(_ name: String) throws(VarlinkLoginError) -> any ProviderAdapter {
        guard let adapter = adapters[name] else { throw .noSuchProvider(name) }
        return adapter
    }

    var names: [String] { adapters.keys.sorted() }

    func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshFailure) -> TokenSet {
        guard let adapter = adapters[account.provider] else { throw .unavailable }
        do throws(RefreshFailure) {
            return try await adapter.refresh(account, tokens: tokens)
        } catch {
            // Events say what a failure did to the session; the log says why it happened. The
            // reasons are ours or the provider's error codes, never token material.
            let level: Logger.Level =
                switch error {
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

    /// Closes the HTTP clients made for private CAs.
    func shutdown() async {
        for client in ownedClients { try? await client.shutdown() }
    }
}

/// Authorization-code logins between `Login` and `CompleteLogin`, keyed by their single-use
/// `state`. Each belongs to the uid that started it and lapses after `lifetime`.
actor PendingLogins {
    struct Entry {
        var provider: String
        var owner: UInt32
        var request: AuthorizationRequest
        var expires: ContinuousClock.Instant
    }

    static let lifetime: Duration = .seconds(600)
    private var entries: [String: Entry] = [:]

    /// Keeps `request` until CompleteLogin or its lifetime ends.
    func add(_ request: AuthorizationRequest, provider: String, owner: UInt32) {
        let now = ContinuousClock.now
        entries = entries.filter { $0.value.expires > now }
        entries[request.state] = Entry(provider: provider, owner: owner, request: request, expires: now + Self.lifetime)
    }

    /// Takes one login allowance of `owner` from `trust`, counting the logins that wait here,
    /// in one step so that concurrent logins cannot both slip under the limit.
    func reserveLogin(owner: UInt32, in trust: Trust) -> VarlinkError? {
        trust.acquire(.login, for: owner, besides: count(owner: owner))
    }

    /// How many logins of `owner` wait for CompleteLogin.
    func count(owner: UInt32) -> Int {
        let now = ContinuousClock.now
        return entries.values.count { $0.owner == owner && $0.expires > now }
    }

    /// Removes and returns the login with this state; a second use, another uid's state, or an
    /// expired one finds nothing.
    func take(state: String, owner: UInt32) -> Entry? {
        guard let entry = entries[state], entry.owner == owner else { return nil }
        entries[state] = nil
        return entry.expires > .now ? entry : nil
    }
}
