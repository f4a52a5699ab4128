import Logging
import SesameCore

/// Logs every event with structured fields (`SESAME_ACCOUNT=`, `SESAME_EVENT=`, …), and tells
/// the status line it is stale.
enum EventLog {
    /// The engine observer that logs each event and marks the status line stale.
    static func observer(logger: Logger, changes: AsyncStream<Void>.Continuation) -> @Sendable (AuthEvent) -> Void {
        { event in
            logger.info(
                "\(event.kind.rawValue)",
                metadata: [
                    "event": "\(event.kind.rawValue)",
                    "account": "\(event.account)",
                    "provider": "\(event.provider)",
                    "state": "\(event.state.rawValue)",
                    "sequence": "\(event.sequence)",
                ]
            )
            changes.yield()
        }
    }
}
