import FoundationEssentials
import Logging
import SesameCore

/// What SIGHUP applies: the access policy, the per-user limits and providers.d take effect at
/// once; any other changed setting is named as waiting for a restart. Everything is read and
/// checked before anything is applied, so a bad file changes nothing.
enum Reload {
    /// Applies `reloaded` where it can be applied live and logs what changed.
    static func apply(
        _ reloaded: DaemonConfiguration,
        running: DaemonConfiguration,
        trust: Trust,
        providers: Providers,
        engine: DaemonEngine,
        logger: Logger
    ) async throws {
        var loaded = try ProviderFiles.load(
            directory: reloaded.providersDirectory,
            credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"]
        )
        trust.update(policy: reloaded.accessPolicy, limits: reloaded.userLimits)
        logger.info(
            "access policy reloaded",
            metadata: [
                "grants": "\(reloaded.accessPolicy.grants.count)",
                "admin_group": "\(reloaded.accessPolicy.adminGroup.map(String.init) ?? "none")",
            ]
        )
        let changes = reloadProviders(&loaded, into: providers, logger: logger)
        for provider in changes.added + changes.changed { await engine.forgetHolds(ofProvider: provider) }
        let orphaned = await engine.list().filter { changes.removed.contains($0.provider) }
        for provider in Set(orphaned.map(\.provider)).sorted() {
            logger.warning(
                "accounts of a removed provider stay, but cannot refresh or be revoked until it is configured again",
                metadata: ["provider": "\(provider)", "accounts": "\(orphaned.count { $0.provider == provider })"]
            )
        }
        let waiting = pendingRestart(reloaded, running: running)
        if !waiting.isEmpty {
            logger.notice(
                "changed settings take effect at the next start of sesamed",
                metadata: ["settings": "\(waiting.joined(separator: ", "))"]
            )
        }
    }

    /// Replaces the running providers with what providers.d holds now, and logs the change. A
    /// provider whose file turned bad keeps the settings it runs with, so that its accounts
    /// still refresh; one that never read stays out until its file is fixed.
    private static func reloadProviders(_ loaded: inout ProviderFiles.Loaded, into providers: Providers, logger: Logger)
        -> Providers.Changes
    {
        let brokenFiles = Set(loaded.broken.map(\.name))
        for (name, file) in providers.files where brokenFiles.contains(file) && loaded.files[name] == nil {
            guard let configuration = try? providers.adapter(name).configuration else { continue }
            loaded.providers.append(configuration)
            loaded.files[name] = file
        }
        let keptFiles = Set(loaded.files.values)
        let changes = providers.reload(loaded.providers, files: loaded.files, directory: loaded.directory)
        providers.broken = loaded.broken.filter { !keptFiles.contains($0.name) }
        providers.unreadable = loaded.broken
        Daemon.log(loaded, logger: logger)
        if changes.isEmpty {
            logger.info("providers unchanged", metadata: ["providers": "\(providers.names.joined(separator: ","))"])
        } else {
            logger.notice("providers reloaded", metadata: ["changes": "\(changes)"])
        }
        return changes
    }

    /// The settings that differ from the running ones and are not applied live.
    static func pendingRestart(_ reloaded: DaemonConfiguration, running: DaemonConfiguration) -> [String] {
        var comparable = reloaded
        comparable.accessPolicy = running.accessPolicy
        comparable.userLimits = running.userLimits
        comparable.providersDirectory = running.providersDirectory
        guard comparable != running else { return [] }
        let old = Dictionary(
            Mirror(reflecting: running).children.compactMap { child in child.label.map { ($0, "\(child.value)") } },
            uniquingKeysWith: { first, _ in first }
        )
        return Mirror(reflecting: comparable).children.compactMap { child in
            guard let label = child.label, old[label] != "\(child.value)" else { return nil }
            return label
        }
    }
}
