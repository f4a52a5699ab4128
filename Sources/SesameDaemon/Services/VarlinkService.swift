import Logging
import ServiceLifecycle
import SesameVarlink

/// Runs the bound Varlink server until graceful shutdown, telling systemd when stopping begins.
struct VarlinkService: Service {
    let server: VarlinkServer
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await cancelWhenGracefulShutdown {
                try await server.run()
            }
        } onGracefulShutdown: {
            notifier.notify(.stopping, .status("Stopping"))
            logger.info("stopping: closing the socket and ending open connections")
        }
    }
}
