import NIOCore
import NIOPosix

/// The event loop engines under test run on: a thread of their own, as the daemon's engine has,
/// shared by every test of the process and never shut down.
public let testEngineLoop: any EventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()
