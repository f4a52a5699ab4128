import Logging
import ServiceLifecycle
import SesameVarlink

/// Runs the bound Varlink server. It is the first service to stop: graceful shutdown tells
/// systemd `STOPPING=1` at once and drains the connections; the service group's
/// `maximumGracefulShutdownDuration` (`shutdown_timeout`) then cancels it, which closes whatever
/// is still open.
struct VarlinkService: Service {
    let server: VarlinkServer
    let notifier: SystemdNotifier
    let shutdownTimeout: Duration
    let logger: Logger

    func run() async throws {
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
