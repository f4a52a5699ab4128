import Foundation
import Logging
import ServiceLifecycleTestKit
import SesameVarlink
import Synchronization
import Testing

@testable import SesameDaemon

/// The Varlink service under a graceful shutdown, as the service group triggers it.
@Suite struct VarlinkServiceShutdownTests {
    @Test func gracefulShutdownTellsSystemdStoppingAndEndsTheServiceWithItsSocketGone() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("svc-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("io.sesame").path
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await VarlinkServer.bind(
            .path(path, mode: 0o600),
            configuration: .init(
                info: .init(vendor: "Test", product: "test", version: "1", url: ""),
                protocolInterface: "test.Protocol"
            ),
            interfaces: [],
            logger: Logger(label: "test")
        )
        let sent = Mutex<[String]>([])
        let notifier = SystemdNotifier { message in sent.withLock { $0.append(message) } }
        let service = VarlinkService(
            server: server,
            notifier: notifier,
            shutdownTimeout: .seconds(5),
            readyStatus: "No accounts",
            logger: Logger(label: "test")
        )
        try await testGracefulShutdown { trigger in
            let running = Task { try await service.run() }
            #expect(FileManager.default.fileExists(atPath: path))
            // Only a broken shutdown ever waits this long; it then fails instead of hanging.
            let watchdog = Task {
                try await Task.sleep(for: .seconds(60))
                running.cancel()
                Issue.record("graceful shutdown did not end the service")
            }
            defer { watchdog.cancel() }
            trigger.triggerGracefulShutdown()
            try await running.value
        }
        // READY=1 comes from the running service, so the group's SIGTERM handling precedes it.
        #expect(sent.withLock { $0 }.first?.contains("READY=1") == true)
        #expect(sent.withLock { $0 }.contains { $0.contains("STOPPING=1") })
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
