import CProcessHardening
import NIOPosix
import ServiceLifecycle

/// Gives the memory a burst of work freed back to the system. glibc keeps what its arena frees:
/// up to 16 MiB at its top (`sesame_tune_malloc`) and every page between blocks still in use, so
/// after another user's flood of connections or calls sesamed would stay as large as at its peak
/// for as long as it runs. Every `interval` the free memory malloc holds is looked at and, past
/// `kept` (room for the next store write), given back. The look and the walk hold the arena's
/// lock, so they run on NIO's thread pool, and only every `interval`.
struct MemoryReturnService: Service {
    /// How long freed memory may stay resident: well within the minute a person would wait.
    static let interval: Duration = .seconds(20)
    /// How much free memory malloc may keep: a store write of a thousand accounts' worth.
    static let kept = 8 << 20

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: Self.interval)
                try await NIOThreadPool.singleton.runIfActive { sesame_return_free_memory(Self.kept) }
            }
        }
    }
}
