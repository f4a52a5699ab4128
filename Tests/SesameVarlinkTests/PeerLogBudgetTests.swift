import Testing

@testable import SesameVarlink

/// A uid sending bad messages in a loop gets a few log lines a minute, and the next line says
/// how many were held back; other uids keep their own budget.
struct PeerLogBudgetTests {
    @Test func linesBeyondTheBudgetAreHeldBackAndCountedInTheNextOne() {
        let budget = PeerLogBudget(perWindow: 3, window: .seconds(60))
        let start = ContinuousClock.now
        #expect((0..<5).map { _ in budget.admit(1000, at: start) } == [0, 0, 0, nil, nil])
        #expect(budget.admit(1001, at: start) == 0)
        #expect(budget.admit(1000, at: start + .seconds(59)) == nil)
        #expect(budget.admit(1000, at: start + .seconds(60)) == 3)
        #expect(budget.admit(1000, at: start + .seconds(61)) == 0)
    }
}
