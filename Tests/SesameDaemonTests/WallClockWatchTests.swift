import CWallClock
import Foundation
import SesameCoreTesting
import Synchronization
import Testing

@testable import SesameDaemon

@Suite struct WallClockWatchTests {
    /// Counts the watch's notices, from its queue.
    final class Notices: Sendable {
        let count = Mutex(0)
    }

    /// The test sets the clock to itself, which moves nothing but clears the kernel's NTP
    /// state: only where it may set the clock (CAP_SYS_TIME) and nothing synchronizes it.
    static let mayTouchTheClock = hasEffectiveCapability(25) && sesame_wall_clock_synchronized() == 0

    @Test(.enabled(if: mayTouchTheClock, "needs CAP_SYS_TIME, and a wall clock no NTP daemon synchronizes"))
    func everySettingOfTheClockIsNoticed() async throws {
        let notices = Notices()
        let watch = try WallClockWatch(
            onChange: { notices.count.withLock { $0 += 1 } },
            onFailure: { Issue.record("the watch failed: \($0)") }
        )
        defer { watch.cancel() }
        #expect(notices.count.withLock { $0 } == 0)
        #expect(sesame_wall_clock_touch() == 0, "errno \(errno)")
        #expect(await yieldUntil { notices.count.withLock { $0 } == 1 })
        // Armed again after the first: the next setting is noticed too.
        #expect(sesame_wall_clock_touch() == 0, "errno \(errno)")
        #expect(await yieldUntil { notices.count.withLock { $0 } == 2 })
    }

    /// Whether capability `number` is in this process's effective set (/proc/self/status).
    static func hasEffectiveCapability(_ number: Int) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let bits = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return bits & (1 << UInt64(number)) != 0
    }
}
