import Synchronization

extension Task where Failure == any Error {
    /// The task's value, except that the waiting task stops waiting, with `CancellationError`, as
    /// soon as it is cancelled. The task itself runs on: others may be waiting for it too.
    ///
    /// `value` alone ignores the waiter's cancellation, so a caller waiting for a shared refresh
    /// would hold up whatever cancels it (a connection being closed, the daemon stopping) until
    /// the provider answered or timed out.
    func valueUnlessCancelled() async throws -> Success {
        let waiter = ResumeOnce<Success>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiter.arm(continuation)
                Task<Void, Never> { waiter.resume(with: await self.result) }
            }
        } onCancel: {
            waiter.resume(with: .failure(Swift.CancellationError()))
        }
    }
}

/// A continuation resumed by the first of several parties; a result that comes before the
/// continuation is armed (cancellation before the wait began) is kept for it.
private final class ResumeOnce<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var early: Result<Value, any Error>?
        var resumed = false
    }

    private let state = Mutex(State())

    func arm(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state -> Result<Value, any Error>? in
            guard let early = state.early else {
                state.continuation = continuation
                return nil
            }
            state.resumed = true
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<Value, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard !state.resumed else { return nil }
            guard let continuation = state.continuation else {
                if state.early == nil { state.early = result }
                return nil
            }
            state.resumed = true
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
}
