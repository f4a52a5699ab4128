import CWallClock
import Foundation
import SesameCoreTesting
import Synchronization
import Testing

@testable import SesameDaemon

// One at a time: a setting of the clock is noticed by every watch in the process.
@Suite(.serialized) struct WallClockWatchTests {
    /// What the watch told, from its queue: how many changes, and the failure that stopped it.
    final class Notices: Sendable {
        let count = Mutex(0)
        let failure = Mutex<String?>(nil)

        /// A watch that reports here.
        func watch() throws -> WallClockWatch {
            try WallClockWatch(
                onChange: { self.count.withLock { $0 += 1 } },
                onFailure: { failure in self.failure.withLock { $0 = "\(failure)" } }
            )
        }
    }

    /// The test sets the clock to its own reading, which moves it back by a moment and clears
    /// the kernel's NTP state: only where it may set the clock (CAP_SYS_TIME) and nothing
    /// synchronizes it.
    static let mayTouchTheClock = hasEffectiveCapability(25) && sesame_wall_clock_synchronized() == 0

    @Test(.enabled(if: mayTouchTheClock, "needs CAP_SYS_TIME, and a wall clock no NTP daemon synchronizes"))
    func everySettingOfTheClockIsNoticed() async throws {
        let notices = Notices()
        let watch = try notices.watch()
        defer { watch.cancel() }
        #expect(notices.count.withLock { $0 } == 0)
        #expect(sesame_wall_clock_touch() == 0, "errno \(errno)")
        #expect(await yieldUntil { notices.count.withLock { $0 } == 1 })
        // Armed again after the first: the next setting is noticed too.
        #expect(sesame_wall_clock_touch() == 0, "errno \(errno)")
        #expect(await yieldUntil { notices.count.withLock { $0 } == 2 })
        #expect(notices.failure.withLock { $0 } == nil)
    }

    @Test func aClockNobodySetsGivesNoNotice() async throws {
        let notices = Notices()
        let watch = try notices.watch()
        // Turns for the watch's queue to report anything it wrongly took for a change.
        #expect(await yieldUntil(turns: 10_000) { notices.count.withLock { $0 } > 0 } == false)
        watch.cancel()
        #expect(notices.failure.withLock { $0 } == nil)
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
