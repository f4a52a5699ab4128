import Foundation
import SesameCore
import SesameProviders
import Testing

@testable import SesameDaemon

/// The provider's rules on refreshing one account, kept before the provider is asked.
struct RefreshPacerTests {
    private let start = Date(timeIntervalSince1970: 1_800_000_000)
    private let account = Account(
        id: "a",
        provider: "p",
        ownerUID: 1000,
        subject: "s",
        state: .active,
        createdAt: Date(timeIntervalSince1970: 1_800_000_000),
        updatedAt: Date(timeIntervalSince1970: 1_800_000_000)
    )

    @Test func applesOnceADayHoldsTheSecondRefreshUntilADayHasPassed() throws {
        let pacer = RefreshPacer()
        #expect(pacer.admit(account, pacing: AppleProvider.refreshPacing, now: start) == nil)
        let held = pacer.admit(account, pacing: AppleProvider.refreshPacing, now: start.addingTimeInterval(3600))
        guard case .paced(let until, let reason) = held else {
            Issue.record("\(String(describing: held))")
            return
        }
        #expect(until == start.addingTimeInterval(86400) && reason.contains("once a day"))
        #expect(pacer.admit(account, pacing: AppleProvider.refreshPacing, now: until) == nil)
    }

    @Test func kakaosLimitsAllowTwentyInTenMinutesAndThirtyAnHour() throws {
        let pacer = RefreshPacer()
        let pacing = KakaoProvider.refreshPacing
        for second in 0..<20 {
            #expect(pacer.admit(account, pacing: pacing, now: start.addingTimeInterval(Double(second))) == nil)
        }
        guard case .paced(let until, _) = pacer.admit(account, pacing: pacing, now: start.addingTimeInterval(20)) else {
            Issue.record("the 21st refresh in ten minutes was let through")
            return
        }
        #expect(until == start.addingTimeInterval(600))
        // Ten more once the first ten minutes are over, then the hour's 30 are spent.
        for second in 0..<10 {
            #expect(pacer.admit(account, pacing: pacing, now: start.addingTimeInterval(600 + Double(second))) == nil)
        }
        guard case .paced(let hourly, _) = pacer.admit(account, pacing: pacing, now: start.addingTimeInterval(1300))
        else {
            Issue.record("the 31st refresh in an hour was let through")
            return
        }
        #expect(hourly == start.addingTimeInterval(3600))
    }

    @Test func anUnpacedProviderIsNeverHeldBack() {
        let pacer = RefreshPacer()
        for second in 0..<100 {
            #expect(pacer.admit(account, pacing: RefreshPacing(), now: start.addingTimeInterval(Double(second))) == nil)
        }
    }
}

extension RefreshPacerTests {
    @Test func accountsNotRefreshedForAWeekAreForgottenOnceThereAreMany() {
        let pacer = RefreshPacer()
        let pacing = AppleProvider.refreshPacing
        for index in 0...1024 {
            var other = account
            other.id = "gone-\(index)"
            #expect(pacer.admit(other, pacing: pacing, now: start) == nil)
        }
        let week = start.addingTimeInterval(RefreshPacer.longestMemory.timeInterval + 1)
        #expect(pacer.admit(account, pacing: pacing, now: week) == nil)
        #expect(pacer.remembered == 1)
    }
}
