import ArgumentParser
import FoundationEssentials
import Logging
import SesameCore
import SesameDaemon
import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The command line of the daemon: where its config, socket and state are; everything else is
/// in the config file.
@main
struct SesamedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sesamed",
        abstract: "Owns the login sessions of OAuth and OpenID Connect providers for this machine.",
        discussion: """
            sesamed logs accounts in, keeps their tokens in an encrypted store, refreshes them \
            before they expire, revokes them on logout, and announces every change to subscribers, \
            over Varlink on a Unix socket (io.sesame.Accounts, io.sesame.Events, io.sesame.Admin, io.sesame.Shares). \
            It is meant to run as a systemd service: it takes its socket from socket activation \
            when given one, reports READY=1, STATUS= and WATCHDOG=1 to $NOTIFY_SOCKET, reloads its \
            config, providers and access rules on SIGHUP, and stops gracefully on SIGTERM or SIGINT.

            Files: the config (sesamed.toml, every key documented in the example shipped in \
            etc/sesame/), one file per provider in providers.d/, and in the state directory the \
            token store (sessions.store), its sequence mark (sessions.store.sequence) and, for \
            development only, a generated key (dev.key). The store key comes from the systemd \
            credential sesame.key, or [store] key_file.

            Exit status: 0 after a clean stop; 1 when start-up fails (a bad config or provider \
            file, a store it cannot open, a socket it cannot bind), with the reason on stderr.
            """,
        version: SesameVersion.current
    )

    @Option(
        name: .long,
        help: "Config file (default: /etc/sesame/sesamed.toml for root, else ~/.config/sesame/sesamed.toml)."
    )
    var config: String?

    @Option(name: .long, help: "Path of the Varlink socket to bind when not socket-activated.")
    var socket: String?

    @Option(name: .customLong("state-dir"), help: "Directory for the token store and other state.")
    var stateDirectory: String?

    @Option(name: .customLong("providers-dir"), help: "Directory of provider files (NAME.toml).")
    var providersDirectory: String?

    /// Tunes malloc while no other thread runs (`Daemon.mallocTuned`), then runs as any command
    /// does.
    static func main() async {
        _ = Daemon.mallocTuned
        await main(nil)
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let uid = getuid()
        let path = config ?? DaemonConfiguration.defaultFilePath(environment: environment, uid: uid)
        let (required, socket, stateDirectory, providersDirectory) =
            (config != nil, self.socket, self.stateDirectory, self.providersDirectory)
        // The same steps at start and on SIGHUP: defaults, the file, then the flags.
        let load: @Sendable () throws -> DaemonConfiguration = {
            var configuration = try ConfigurationFile.load(
                path: path,
                onto: .defaults(environment: environment, uid: uid),
                required: required
            )
            if let socket { configuration.socketPath = socket }
            if let stateDirectory { configuration.stateDirectory = stateDirectory }
            if let providersDirectory { configuration.providersDirectory = providersDirectory }
            return configuration
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try load()
        } catch {
            throw StartUpError("\(error)")
        }

        let journal = JournalLogHandler.isJournalConnected(environment: environment)
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                journal ? JournalLogHandler(identifier: "sesamed") : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "sesamed")
        do {
            try await Daemon(configuration: configuration, reread: load, logger: logger).run()
        } catch {
            throw StartUpError("\(error)")
        }
    }
}

/// A start-up failure: one line on stderr and exit status 1, no stack trace.
struct StartUpError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
