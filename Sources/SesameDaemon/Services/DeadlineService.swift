import Logging
import ServiceLifecycle
import SesameCore

/// Runs the engine's deadline loop (`expiring`, `expired`, refresh-token expiry) until shutdown,
/// and tells it when the wall clock was set or the machine resumed, so that it can sleep until
/// its next deadline.
struct DeadlineService: Service {
    let engine: DaemonEngine
    let logger: Logger

    func run() async throws {
        let watch = watchWallClock()
        defer { watch?.cancel() }
        await cancelWhenGracefulShutdown {
            await engine.runDeadlines()
        }
    }

    /// The watch of the wall clock; nil when the system refuses one, and a step of the clock is
    /// then seen only at the loop's periodic check (`SessionPolicy.wallClockCheckInterval`).
    private func watchWallClock() -> WallClockWatch? {
        let (engine, logger) = (engine, logger)
        let fallback = "a step of the wall clock is seen only at the deadline loop's periodic check"
        do {
            return try WallClockWatch(
                onChange: {
                    logger.debug("wall clock set, or the machine resumed: deadlines looked at again")
                    engine.wallClockChanged()
                },
                onFailure: { failure in
                    logger.warning("lost the watch of the wall clock: \(fallback)", metadata: ["error": "\(failure)"])
                }
            )
        } catch {
            logger.warning("cannot watch the wall clock: \(fallback)", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
