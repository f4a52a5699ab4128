import Synchronization

/// Waiting for a task with a limit on the waiting, not on the task: a caller may stop waiting
/// for a refresh while the refresh itself goes on, so that its answer is kept when it comes.
enum TaskDeadline {
    /// The result of `task`, or nil once `limit` (if any) has passed on `clock`, or the waiting
    /// task is cancelled, before it finished. `task` runs on either way: others may be waiting
    /// for it too (`value` alone would ignore the waiter's cancellation, and a caller waiting
    /// for a shared refresh would hold up a closing connection or a stopping daemon).
    static func result<Success: Sendable>(
        of task: Task<Success, any Error>,
        within limit: Duration?,
        clock: any SessionClock
    ) async -> Result<Success, any Error>? {
        let first = FirstOf<Result<Success, any Error>?>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                first.install(continuation)
                let timer = limit.map { limit in
                    Task {
                        try? await clock.sleep(for: limit)
                        first.resume(with: nil)
                    }
                }
                Task {
                    let outcome = await task.result
                    first.resume(with: outcome)
                    timer?.cancel()
                }
            }
        } onCancel: {
            first.resume(with: nil)
        }
    }
}

/// A continuation resumed by whichever of several racers comes first; later ones are ignored.
private final class FirstOf<Value: Sendable>: Sendable {
    private enum State {
        case waiting
        case installed(CheckedContinuation<Value, Never>)
        /// Resumed before the continuation was installed (a cancellation that came first).
        case early(Value)
        case done
    }

    private let state = Mutex<State>(.waiting)

    func install(_ continuation: CheckedContinuation<Value, Never>) {
        let early: Value? = state.withLock { state in
            switch state {
            case .waiting:
                state = .installed(continuation)
                return nil
            case .early(let value):
                state = .done
                return value
            case .installed, .done:
                return nil
            }
        }
        if let early { continuation.resume(returning: early) }
    }

    func resume(with value: Value) {
        let continuation: CheckedContinuation<Value, Never>? = state.withLock { state in
            switch state {
            case .waiting:
                state = .early(value)
                return nil
            case .installed(let continuation):
                state = .done
                return continuation
            case .early, .done:
                return nil
            }
        }
        continuation?.resume(returning: value)
    }
}
