import CProcessHardening
import NIOPosix
import ServiceLifecycle

/// Gives the memory a burst of work freed back to the system, every `interval`. glibc keeps what
/// its arena frees: up to 16 MiB at its top (`sesame_tune_malloc`) and every page between blocks
/// still in use, so after another user's flood of connections or calls sesamed would stay as
/// large as at its peak for as long as it runs. Returning costs little when there is nothing to
/// return, and the walk runs on NIO's thread pool, never on an event loop or the cooperative pool.
struct MemoryReturnService: Service {
    /// How long freed memory may stay resident: well within the minute a person would wait.
    static let interval: Duration = .seconds(20)

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: Self.interval)
                try await NIOThreadPool.singleton.runIfActive { sesame_return_free_memory() }
            }
        }
    }
}
