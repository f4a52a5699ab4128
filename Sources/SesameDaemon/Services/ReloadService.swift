import Logging
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Handles SIGHUP: re-reads the config file and reports `RELOADING=1` then `READY=1` to systemd.
/// A file that no longer parses is logged and the running configuration is kept.
struct ReloadService: Service {
    /// Created before `READY=1`: a SIGHUP that arrives once systemd believes the daemon is up must
    /// be trapped, not take the default action of ending the process.
    let hangups: UnixSignalsSequence
    let notifier: SystemdNotifier
    let reload: @Sendable () async throws -> String
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in hangups {
                notifier.notify(.reloading(monotonicMicroseconds: Self.monotonicMicroseconds()))
                do {
                    let status = try await reload()
                    logger.info("configuration reloaded")
                    notifier.notify(.ready, .status(status))
                } catch {
                    logger.error("reload failed; keeping the running configuration", metadata: ["error": "\(error)"])
                    notifier.notify(.ready, .status("Reload failed: \(error)"))
                }
            }
        }
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }
}
