import Logging
import ServiceLifecycle
import SesameVarlink

/// Runs the bound Varlink server and tells systemd `READY=1` as it starts: from inside the
/// service group, whose SIGTERM handling is in place by then, so a stop requested right after
/// start is a graceful one (before, a SIGTERM in that moment killed the process). It is the
/// first service to stop: graceful shutdown tells systemd `STOPPING=1` at once and drains the
/// connections; the service group's `maximumGracefulShutdownDuration` (`shutdown_timeout`)
/// then cancels it, which closes whatever is still open.
struct VarlinkService: Service {
    let server: VarlinkServer
    let notifier: SystemdNotifier
    let shutdownTimeout: Duration
    /// The status line sent with `READY=1`.
    let readyStatus: String
    let logger: Logger

    func run() async throws {
        notifier.notify(.ready, .status(readyStatus))
        try await withGracefulShutdownHandler {
            try await server.run()
        } onGracefulShutdown: {
            notifier.notify(.stopping, .status("Stopping"))
            logger.info(
                "stopping: closing the socket and draining connections",
                metadata: ["shutdown_timeout_s": "\(shutdownTimeout.components.seconds)"]
            )
            server.shutdown()
        }
        // STOPPING=1 must reach systemd before the process is gone.
        await notifier.flush(waitingAtMost: .seconds(1))
    }
}
