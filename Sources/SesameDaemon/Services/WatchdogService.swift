import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SesameCore

/// Sends `WATCHDOG=1` at half the interval systemd asked for, but only after the event loops that
/// serve clients and the session engine have each answered, so a wedged daemon gets restarted.
struct WatchdogService: Service {
    let notifier: SystemdNotifier
    let engine: DaemonEngine
    let logger: Logger

    func run() async throws {
        guard let interval = notifier.watchdogInterval else {
            try? await gracefulShutdown()
            return
        }
        logger.info("watchdog enabled", metadata: ["interval_ms": "\(interval.components.seconds * 1000)"])
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Self.loopsAnswer()
                _ = await engine.currentSequence
                notifier.notify(.watchdog)
                try await Task.sleep(for: interval / 2)
            }
        }
    }

    private static func loopsAnswer() async throws {
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            try await loop.submit {}.get()
        }
    }
}
