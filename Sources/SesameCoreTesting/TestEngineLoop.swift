import NIOCore
import NIOPosix

/// The event loop engines under test run on: a thread of their own, as the daemon's engine has,
/// shared by every test of the process and never shut down.
public let testEngineLoop: any EventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()

/// Runs `body` with an event loop of its own, shut down after it: for a test that holds its
/// engine's loop up on purpose, which on `testEngineLoop` would stall every other test's engine.
public func withPrivateEngineLoop<Result: Sendable>(
    _ body: (any EventLoop) async throws -> Result
) async throws -> Result {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    do {
        let result = try await body(group.next())
        try await group.shutdownGracefully()
        return result
    } catch {
        try? await group.shutdownGracefully()
        throw error
    }
}
