import NIOCore

/// Runs a task's jobs on one NIO event loop: the connection's own. A connection's task
/// prefers it, so reading a call, answering it without an actor, and writing the reply
/// happen on the thread that owns the socket, with no hop to another thread and back.
/// (Streaming calls and large ones are answered on the cooperative pool: see `answerCalls`.)
final class EventLoopExecutor: TaskExecutor {
    private let loop: any EventLoop

    /// An executor for `loop`.
    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
