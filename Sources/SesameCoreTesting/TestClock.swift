import Foundation
import SesameCore
import Synchronization

/// A clock that tests move by hand: `advance` moves both readings (time passing while awake),
/// `jumpWallClock` moves only the wall clock (NTP or a user setting the time), and `suspend`
/// moves the wall clock while monotonic time stands still, as a laptop with its lid shut does.
public final class TestClock: SessionClock {
    private struct Sleeper {
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var wall: Date
        var monotonic: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    /// Creates a clock whose wall reading starts at `start`.
    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex(State(wall: start))
    }

    public var now: Date { state.withLock { $0.wall } }

    /// How many tasks are sleeping on this clock right now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// How long each sleeping task has left to sleep, shortest first.
    public var sleepsLeft: [Duration] {
        state.withLock { state in state.sleepers.values.map { $0.deadline - state.monotonic }.sorted() }
    }

    /// Returns true once `count` tasks sleep on this clock, so that moving it wakes them, or
    /// false when they still do not after many turns (the test then fails on what it checks
    /// next instead of hanging). It yields rather than waiting on wall time, so a busy machine
    /// only makes it slower.
    @discardableResult
    public func untilSleeping(_ count: Int = 1, turns: Int = 1_000_000) async -> Bool {
        await yieldUntil(turns: turns) { sleeperCount >= count }
    }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let due = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    let deadline = state.monotonic + duration
                    if deadline <= state.monotonic { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if due { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Time passes while awake: both clocks move, and due sleepers wake.
    public func advance(by duration: Duration) {
        let woken = state.withLock { state in
            state.monotonic += duration
            state.wall += duration.timeInterval
            return Self.takeDue(&state)
        }
        for continuation in woken { continuation.resume() }
    }

    /// The wall clock jumps; no sleeper wakes, just as with a real monotonic clock.
    public func jumpWallClock(by duration: Duration) {
        state.withLock { $0.wall += duration.timeInterval }
    }

    /// The machine sleeps for `duration`: the wall clock moves, monotonic time does not.
    public func suspend(for duration: Duration) {
        jumpWallClock(by: duration)
    }

    private static func takeDue(_ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        let due = state.sleepers.filter { $0.value.deadline <= state.monotonic }
        for id in due.keys { state.sleepers[id] = nil }
        return due.values.sorted { $0.deadline < $1.deadline }.map(\.continuation)
    }
}

/// Yields until `condition` holds, and says whether it does: false after `turns` yields, so a
/// test fails on what it checks next instead of hanging. No wall time is involved, so a busy
/// machine only makes it slower.
public func yieldUntil(turns: Int = 1_000_000, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<turns {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}
