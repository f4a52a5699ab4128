import ServiceLifecycle
import SesameCore

/// Runs the engine's deadline loop (`expiring`, `expired`, refresh-token expiry) until shutdown.
struct DeadlineService: Service {
    let engine: DaemonEngine

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await engine.runDeadlines()
        }
    }
}
