import CWallClock
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Calls its handler whenever the wall clock is set (NTP stepping it, a user, a restored virtual
/// machine) or the machine resumes from suspend. The deadline loop sleeps until its next deadline
/// on a clock that is never set, so a step of the wall clock is what it must hear of (a resume
/// its sleep sees by itself, but the notice costs nothing). Linux tells of both through a timer
/// that the change cancels (`sesame_wall_clock_watch`), read here when Dispatch sees it turn
/// readable, so watching costs no wake-ups of its own.
final class WallClockWatch {
    /// Why the clock cannot be watched (any more): the failing call and its errno.
    struct WatchError: Error, CustomStringConvertible {
        let call: String
        let code: Int32

        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    private let source: any DispatchSourceRead

    /// Watches the clock until `cancel()`, calling `onChange` after every change on a queue of
    /// its own; `onFailure` hears why the watch stopped, if it stops by itself.
    init(
        onChange: @escaping @Sendable () -> Void,
        onFailure: @escaping @Sendable (WatchError) -> Void
    ) throws(WatchError) {
        let descriptor = sesame_wall_clock_watch()
        guard descriptor >= 0 else { throw WatchError(call: "timerfd_create", code: errno) }
        let source = DispatchSource.makeReadSource(
            fileDescriptor: descriptor,
            queue: DispatchQueue(label: "io.sesame.wall-clock")
        )
        // The handler holds the source until it is cancelled (by `cancel()`, or here once the
        // timer cannot be used, which would otherwise be retried at every turn), when Dispatch
        // lets go of its handlers.
        source.setEventHandler {
            var failure: WatchError?
            switch sesame_wall_clock_changed(descriptor) {
            case 0: return
            case 1:
                if sesame_wall_clock_arm(descriptor) != 0 { failure = WatchError(call: "timerfd_settime", code: errno) }
                onChange()
            default: failure = WatchError(call: "read", code: errno)
            }
            guard let failure else { return }
            onFailure(failure)
            source.cancel()
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        self.source = source
    }

    deinit {
        source.cancel()
    }

    /// Stops watching and closes the timer.
    func cancel() {
        source.cancel()
    }
}
