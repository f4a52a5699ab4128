import CPeerCredentials
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Takes connections off the listening socket on a thread of its own, as fast as they arrive.
/// The kernel's queue serves callers in arrival order, and a connection's full set-up on an
/// event loop costs many times the peer's connect: one user connecting in a loop kept that
/// queue full, and everyone else's connect waited behind it for seconds. Here a connection
/// costs little more than the peer's connect until the gate admits it (`ConnectionSetUp`), so
/// the queue stays short, and the gate's per-uid limit bounds how many of one user's
/// connections wait on the event loops ahead of another's.
final class ConnectionAcceptor: Sendable {
    private enum Phase {
        case ready
        case running
        case stopped
    }

    private struct State {
        var phase = Phase.ready
        /// Set once the listening socket is closed.
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Accepts taken between two looks at the stop pipe, while the queue keeps refilling.
    private static let acceptsPerLook = 1024
    /// How long accepting rests, watching only the stop pipe, when the process is out of
    /// descriptors (the gate's totals keep it from getting there, so this is a backstop).
    private static let restWhenOutOfDescriptors: Int32 = 100

    private let listening: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let setUp: ConnectionSetUp
    private let logger: Logger
    private let onFailure: @Sendable () -> Void
    private let state = NIOLockedValueBox(State())

    /// Takes over `listening` (a listening, non-blocking socket), which it closes once stopped;
    /// `onFailure` is called if accepting fails for good.
    init(
        listening: Int32,
        setUp: ConnectionSetUp,
        logger: Logger,
        onFailure: @escaping @Sendable () -> Void
    ) throws(VarlinkEndpointError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let code = errno
            close(listening)
            throw .systemCallFailed(call: "pipe", path: "the accept loop's stop pipe", errno: code)
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        self.listening = listening
        self.stopPipe = (ends[0], ends[1])
        self.setUp = setUp
        self.logger = logger
        self.onFailure = onFailure
    }

    /// Returns once accepting has stopped and the listening socket is closed.
    func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let closed = state.withLockedValue { state in
                if !state.closed { state.waiters.append(continuation) }
                return state.closed
            }
            if closed { continuation.resume() }
        }
    }

    /// Starts accepting on a thread of its own; does nothing once started or stopped.
    func start() {
        let starts = state.withLockedValue { state in
            guard state.phase == .ready else { return false }
            state.phase = .running
            return true
        }
        guard starts else { return }
        // A pool of one thread of its own: the loop blocks in poll, which neither an event
        // loop nor the shared pool for blocking work may.
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) { self.acceptUntilStopped() }
            .whenComplete { _ in
                self.closeDescriptors()
                pool.shutdownGracefully { _ in }
            }
    }

    /// Stops accepting; connections already taken are not touched. Connections still queued
    /// stay in the kernel's queue: on a socket the server bound they are refused once it is
    /// closed, on one systemd holds the next sesamed takes them.
    func stop() {
        let closesNow = state.withLockedValue { state -> Bool in
            defer { state.phase = .stopped }
            switch state.phase {
            case .ready:
                return true
            case .running:
                // Under the lock, so the pipe is not closed (and its number reused) meanwhile.
                if !state.closed {
                    var byte: UInt8 = 0
                    _ = write(stopPipe.write, &byte, 1)
                }
                return false
            case .stopped:
                return false
            }
        }
        if closesNow { closeDescriptors() }
    }

    private func closeDescriptors() {
        let waiters = state.withLockedValue { state in
            state.closed = true
            close(listening)
            close(stopPipe.read)
            close(stopPipe.write)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits for connections, or the stop, and takes every connection queued each time. Returns
    /// on the stop, or when accepting cannot go on: then `failed` ends the server.
    private func acceptUntilStopped() {
        var watched = [
            pollfd(fd: listening, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0),
        ]
        var resting = false
        while true {
            // While resting only the stop is watched: the queue would wake the poll at once.
            watched[0].fd = resting ? -1 : listening
            let ready = poll(&watched, 2, resting ? Self.restWhenOutOfDescriptors : -1)
            if ready < 0 && errno != EINTR { return failed("poll", errno: errno) }
            if watched[1].revents != 0 { return }
            switch acceptQueued() {
            case .emptied:
                resting = false
            case .outOfDescriptors:
                if !resting { logger.error("accepting rests: the process has no descriptor left for a connection") }
                resting = true
            case .stopping:
                return
            case .failed(let code):
                return failed("accept4", errno: code)
            }
        }
    }

    /// What one round of accepting ended on.
    private enum Round {
        case emptied, outOfDescriptors, stopping
        case failed(errno: Int32)
    }

    /// Accepts until the queue is empty or `acceptsPerLook` were taken, looking for a stop
    /// before each: what is still queued then is left for the next server.
    private func acceptQueued() -> Round {
        for _ in 0..<Self.acceptsPerLook {
            guard state.withLockedValue({ $0.phase != .stopped }) else { return .stopping }
            let descriptor = accept4(listening, nil, nil, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
            guard descriptor >= 0 else {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EAGAIN: return .emptied
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .outOfDescriptors
                case let code: return .failed(errno: code)
                }
            }
            guard !Self.endedUnused(descriptor), let peer = Self.peer(of: descriptor) else {
                close(descriptor)
                continue
            }
            setUp.take(descriptor, peer: peer)
        }
        return .emptied
    }

    /// Accepting failed for good (it never does on a socket that listens): said, and the
    /// server told to stop, so it does not run on deaf.
    private func failed(_ call: String, errno code: Int32) {
        logger.critical(
            "cannot accept connections; stopping",
            metadata: ["call": "\(call)", "error": "\(String(cString: strerror(code)))"]
        )
        onFailure()
    }

    /// Whether the peer closed (or shut down its side) without sending anything: there is
    /// nothing to answer, so the connection is closed here, at the cost of one look, rather
    /// than set up on an event loop only to read its end. A client connecting and closing in a
    /// loop makes nothing else.
    private static func endedUnused(_ descriptor: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) == 0
    }

    /// The credentials the kernel recorded when the peer connected; nil if it cannot say.
    private static func peer(of descriptor: Int32) -> PeerCredentials? {
        var credentials = sesame_ucred()
        var length = socklen_t(MemoryLayout<sesame_ucred>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }
}
