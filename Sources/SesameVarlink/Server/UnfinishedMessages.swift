import NIOCore
import Synchronization

/// What peers may keep of messages they have begun and not finished: each connection at most
/// `timeout` without completing one, and each uid at most `bytesPerUser` held over all its
/// connections. Without these, 128 connections of one user each holding 1 MiB of a message it
/// never finished grew sesamed by 120 MB, for as long as the user liked.
final class UnfinishedMessages: Sendable {
    /// How long a connection may hold part of a message without completing any.
    let timeout: TimeAmount
    /// How many bytes of unfinished messages one uid's connections may hold together.
    let bytesPerUser: Int
    private let held = Mutex<[UInt32: Int]>([:])

    init(timeout: TimeAmount, bytesPerUser: Int) {
        self.timeout = timeout
        self.bytesPerUser = bytesPerUser
    }

    /// Changes what `uid` holds by `change` bytes; false (and nothing changed) when that would
    /// take it over `bytesPerUser`.
    func change(_ uid: UInt32, by change: Int) -> Bool {
        held.withLock { held in
            let now = held[uid, default: 0] + change
            guard change <= 0 || now <= bytesPerUser else { return false }
            held[uid] = now > 0 ? now : nil
            return true
        }
    }

    /// What `uid` holds now.
    func bytes(of uid: UInt32) -> Int {
        held.withLock { $0[uid, default: 0] }
    }
}

/// One connection's part of `UnfinishedMessages`: the bytes of an unfinished message it holds,
/// counted against its uid, and the timer that closes it when no message completes in time.
/// Lives on the connection's event loop.
struct UnfinishedMessageWatch {
    private var held = 0
    private var timer: Scheduled<Void>?

    /// After a read that left `bytes` of a message unfinished (`completed`: whether it also
    /// completed one): counts them for `uid`, and times the wait from the last completed
    /// message. False, with nothing changed, when the uid would hold more than it may.
    /// `onTimeout` is asked for only when a timer starts: most reads complete what they bring.
    mutating func hold(
        _ bytes: Int,
        completed: Bool,
        uid: UInt32,
        in limits: UnfinishedMessages,
        on loop: any EventLoop,
        onTimeout: () -> @Sendable () -> Void
    ) -> Bool {
        if bytes != held {
            guard limits.change(uid, by: bytes - held) else { return false }
            held = bytes
        }
        if bytes == 0 || completed {
            timer?.cancel()
            timer = nil
        }
        if bytes > 0, timer == nil {
            timer = loop.scheduleTask(in: limits.timeout, onTimeout())
        }
        return true
    }

    /// Times the wait for the unfinished message anew, if there is one.
    mutating func restart(
        in limits: UnfinishedMessages,
        on loop: any EventLoop,
        onTimeout: @escaping @Sendable () -> Void
    ) {
        timer?.cancel()
        timer = held > 0 ? loop.scheduleTask(in: limits.timeout, onTimeout) : nil
    }

    /// Lets go of what the connection held: it has ended, or dropped its unfinished message.
    mutating func release(uid: UInt32, in limits: UnfinishedMessages) {
        timer?.cancel()
        timer = nil
        _ = limits.change(uid, by: -held)
        held = 0
    }
}
