import CProcessHardening
import FoundationEssentials
import Logging
import SesameCore
import SesameStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why the daemon could not start.
public enum DaemonStartError: Error, Sendable, CustomStringConvertible {
    /// The state directory could not be created.
    case stateDirectory(path: String, reason: String)

    public var description: String {
        switch self {
        case .stateDirectory(let path, let reason): "cannot create state directory \(path): \(reason)"
        }
    }
}

/// What the daemon needs before it can serve: its state directory, the opened store, and the
/// provider files. Each failure here stops the start with an error that says what to fix.
extension Daemon {
    /// Creates the state directory (0700), takes its lock (held until the returned lock goes)
    /// and opens the store in it, with the keys the configuration and systemd's credentials offer.
    func openStore() throws -> (EncryptedStore, SessionSnapshot, StateDirectoryLock) {
        try Self.makeStateDirectory(configuration.stateDirectory)
        let lock = try StateDirectoryLock.acquire(configuration.stateDirectory)
        let (store, snapshot) = try EncryptedStore.open(
            directory: configuration.stateDirectory,
            keySources: KeySources(
                credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"],
                keyFile: configuration.storeKeyFile,
                generatedKeyFile: configuration.allowGeneratedKey ? configuration.stateDirectory + "/dev.key" : nil
            ),
            onDamage: configuration.onDamagedStore,
            sequenceFile: configuration.storeSequenceFile,
            logger: logger
        )
        return (store, snapshot, lock)
    }

    /// Keeps the tokens this process will hold out of core files and away from ptrace (which
    /// also means Swift's crash backtracer cannot read it). Each step is tried on its own;
    /// without one sesamed still runs, saying so.
    func forbidCoreDumps() {
        if sesame_forbid_dumping() != 0 {
            logger.warning(
                "cannot make sesamed non-dumpable",
                metadata: ["error": "\(String(cString: strerror(errno)))"]
            )
        }
        if sesame_forbid_core_files() != 0 {
            logger.warning("cannot turn core files off", metadata: ["error": "\(String(cString: strerror(errno)))"])
        }
    }

    /// Tunes malloc to keep a store write's memory for the next one, in one arena that
    /// `MemoryReturnService` can empty (`sesame_tune_malloc`), the first time it is read; whether
    /// that worked. A limit on arenas binds only the threads that allocate after it, so sesamed's
    /// `main` reads this first thing, on the main thread, before Swift's concurrency starts any
    /// thread of its own.
    public static let mallocTuned = sesame_tune_malloc() == 1

    /// Says so when malloc could not be tuned; sesamed then only writes more slowly, and may keep
    /// what a flood left.
    func checkMallocTuned() {
        if !Self.mallocTuned {
            logger.notice("cannot tune malloc; store writes map their buffers anew, and floods leave memory behind")
        }
    }

    /// The configured providers, each with the HTTP client it will use.
    func loadProviders() throws -> Providers {
        let loaded = try ProviderFiles.load(
            directory: configuration.providersDirectory,
            credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"]
        )
        let providers = Providers(loaded, logger: logger)
        logger.info("providers configured", metadata: ["providers": "\(providers.names.joined(separator: ","))"])
        Self.log(loaded, logger: logger)
        return providers
    }

    /// Says which provider files did not read, and what to do (the other providers work), and
    /// what in the files that did is to be mended.
    static func log(_ loaded: ProviderFiles.Loaded, logger: Logger) {
        for file in loaded.broken {
            logger.warning(
                "provider file not used; fix it and reload sesamed (systemctl reload sesamed)",
                metadata: ["provider": "\(file.name)", "error": "\(file.error)"]
            )
        }
        for provider in loaded.providers {
            for notice in provider.notices {
                logger.notice(
                    "provider file to mend",
                    metadata: ["provider": "\(provider.name)", "notice": "\(notice)"]
                )
            }
        }
    }

    static func makeStateDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            // The system's words for what failed (FoundationEssentials' errors carry the errno);
            // Foundation's localizedDescription would link ICU into sesamed for this one message.
            let posix = (error as? CocoaError)?.underlying as? POSIXError
            let reason = posix.map { String(cString: strerror($0.code.rawValue)) } ?? "\(error)"
            throw DaemonStartError.stateDirectory(path: path, reason: reason)
        }
    }
}
