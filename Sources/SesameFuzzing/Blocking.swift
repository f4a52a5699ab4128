import Dispatch
import Synchronization

/// Runs `body` to completion from libFuzzer's synchronous callback, on the callback's own thread:
/// the task prefers an executor that the callback drains until the task ends. Handing the task
/// to Swift's pool and waiting for it cost two thread wake-ups per input, and one more for every
/// `Task.yield` (one per poll of a device login). The fuzzer's thread is not part of Swift's
/// cooperative pool, so blocking it starves no one.
public func runBlocking(_ body: @escaping @Sendable () async -> Void) {
    let executor = CallerExecutor()
    Task(executorPreference: executor) {
        await body()
        executor.finish()
    }
    executor.runUntilFinished()
}

/// A task executor whose jobs the thread that calls `runUntilFinished` runs, in order. Jobs
/// may be enqueued from any thread (a continuation resumed elsewhere); the caller waits for them.
private final class CallerExecutor: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var finished = false
    }

    private let state = Mutex(State())
    /// Signalled once for each job enqueued and once when the task ends.
    private let ready = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        state.withLock { $0.jobs.append(job) }
        ready.signal()
    }

    /// The task's body returned: `runUntilFinished` returns once the jobs before it have run.
    func finish() {
        state.withLock { $0.finished = true }
        ready.signal()
    }

    /// Runs jobs as they come until the task has finished.
    func runUntilFinished() {
        while true {
            ready.wait()
            let next = state.withLock { state -> (job: UnownedJob?, finished: Bool) in
                state.jobs.isEmpty ? (nil, state.finished) : (state.jobs.removeFirst(), false)
            }
            if let job = next.job {
                job.runSynchronously(on: asUnownedTaskExecutor())
            } else if next.finished {
                return
            }
        }
    }
}
