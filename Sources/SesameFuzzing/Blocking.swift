import Dispatch

/// Runs `body` to completion from libFuzzer's synchronous callback. The fuzzer calls from one
/// thread that is not part of Swift's cooperative pool, so blocking it here cannot starve the
/// task it waits for.
public func runBlocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}
