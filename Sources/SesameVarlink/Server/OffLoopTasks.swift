import NIOConcurrencyHelpers

/// The tasks that answer or parse calls off the event loops, counted so that a stopped server
/// returns only once none is left running.
final class OffLoopTasks: Sendable {
    private struct State {
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Runs `work` in a task on the cooperative pool, counted until it ends.
    func start(_ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        state.withLockedValue { $0.running += 1 }
        return Task(executorPreference: globalConcurrentExecutor) {
            await work()
            let waiters = self.state.withLockedValue { state in
                state.running -= 1
                guard state.running == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Returns once no task is running. Called once every connection has ended: a connection
    /// starts no task after its channel has closed.
    func allEnded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state in
                guard state.running > 0 else { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
