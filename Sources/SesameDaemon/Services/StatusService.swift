import Logging
import ServiceLifecycle
import SesameCore

/// Keeps systemd's `STATUS=` line current after changes (`EventLog` marks them), at most once
/// a second.
struct StatusService: Service {
    let engine: DaemonEngine
    let changes: AsyncStream<Void>
    let notifier: SystemdNotifier

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            for await _ in changes {
                notifier.notify(.status(await Self.status(of: engine)))
                // At most one status line a second: a burst of changes becomes one update (the
                // stream keeps only the newest), and the manager's socket is never flooded.
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// One line for `systemctl status`: how many accounts, and how many need attention.
    static func status(of engine: DaemonEngine) async -> String {
        let accounts = await engine.list()
        let active = accounts.filter { $0.state == .active || $0.state == .refreshing }.count
        let attention = accounts.filter { $0.state == .expired || $0.state == .needsLogin }.count
        return "\(accounts.count) accounts: \(active) active, \(attention) need attention"
    }
}
