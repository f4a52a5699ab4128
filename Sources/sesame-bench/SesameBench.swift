import ArgumentParser
import Foundation
import Logging
import SesameCore
import SesameStore

/// `sesame-bench`: measures what the issues give targets for and prints a table for BENCHMARKS.md.
@main
struct SesameBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sesame-bench",
        abstract: "Measure token-store write latency and event fan-out."
    )

    @Option(help: "Writes per store size.")
    var writes = 200

    @Option(help: "Directory for the store under test (its file system is what is measured).")
    var directory = FileManager.default.temporaryDirectory.path

    func run() async throws {
        print("| measurement | p50 | p99 | max |")
        print("|---|---|---|---|")
        for accounts in [1, 100, 1000] {
            let samples = try storeWrites(accounts: accounts)
            print(row("store write, \(accounts) accounts (\(writes) writes, fsync'd)", samples))
        }
        let (publish, delivery) = try await fanOut(subscribers: 10_000, events: 200)
        print(row("publish one event to 10,000 subscribers (200 events)", publish))
        print(row("deliver 200 events to each of 10,000 subscribers (total)", [delivery]))
    }

    private func storeWrites(accounts: Int) throws -> [Duration] {
        let folder = directory + "/sesame-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (store, _) = try EncryptedStore.open(
            directory: folder,
            keySources: KeySources(credentialsDirectory: nil, keyFile: nil, generatedKeyFile: folder + "/dev.key"),
            onDamage: .refuse,
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let snapshot = Self.snapshot(accounts: accounts)
        let clock = ContinuousClock()
        return try (0..<writes).map { _ in try clock.measure { try store.save(snapshot) } }
    }

    private func fanOut(subscribers: Int, events: Int) async throws -> ([Duration], Duration) {
        let registry = EventRegistry<AuthEvent>(
            queueLimit: events,
            historyLimit: 0,
            lastSequenceBeforeStart: 0,
            encode: { $0 }
        )
        let subscriptions = (0..<subscribers).map { _ in
            registry.subscribe(filter: EventFilter(), since: nil, current: 0).0
        }
        let clock = ContinuousClock()
        let account = Self.snapshot(accounts: 1).accounts[0].account
        let start = clock.now
        var publishes: [Duration] = []
        for sequence in 1...UInt64(events) {
            let event = AuthEvent(sequence: sequence, time: Date(), kind: .tokenRefreshed, account: account)
            publishes.append(clock.measure { registry.publish(event) })
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in stride(from: 0, to: subscribers, by: 500) {
                let slice = subscriptions[chunk..<min(chunk + 500, subscribers)]
                group.addTask {
                    for subscription in slice {
                        for _ in 0..<events { _ = try await subscription.next() }
                    }
                }
            }
            try await group.waitForAll()
        }
        return (publishes, clock.now - start)
    }

    private static func snapshot(accounts: Int) -> SessionSnapshot {
        let now = Date()
        return SessionSnapshot(
            accounts: (0..<accounts).map { index in
                StoredAccount(
                    account: Account(
                        id: "google-\(index)",
                        provider: "google",
                        ownerUID: 1000,
                        subject: "subject-\(index)",
                        scopes: ["openid", "email", "profile"],
                        state: .active,
                        accessTokenExpiresAt: now.addingTimeInterval(3600),
                        createdAt: now
                    ),
                    tokens: TokenSet(
                        accessToken: String(repeating: "a", count: 1200),
                        refreshToken: String(repeating: "r", count: 500),
                        idToken: String(repeating: "i", count: 900),
                        accessTokenExpiresAt: now.addingTimeInterval(3600)
                    )
                )
            },
            lastSequence: 42
        )
    }

    private func row(_ name: String, _ samples: [Duration]) -> String {
        let sorted = samples.sorted()
        func at(_ fraction: Double) -> String {
            Self.format(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))])
        }
        return "| \(name) | \(at(0.5)) | \(at(0.99)) | \(Self.format(sorted.last ?? .zero)) |"
    }

    private static func format(_ duration: Duration) -> String {
        let microseconds = Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
        return microseconds >= 1000
            ? String(format: "%.2f ms", microseconds / 1000) : String(format: "%.0f µs", microseconds)
    }
}
