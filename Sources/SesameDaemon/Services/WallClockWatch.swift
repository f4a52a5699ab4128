import CWallClock
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Calls its handler whenever the wall clock is set (NTP stepping it, a user, a restored virtual
/// machine) or the machine resumes from suspend: what the deadline loop, which sleeps until its
/// next deadline on a clock that does not see either, must hear of. Linux tells of both through
/// a timer that the change cancels (`sesame_wall_clock_watch`), read here as Dispatch sees it
/// turn readable, so watching costs no wake-ups of its own.
final class WallClockWatch {
    /// Why the clock cannot be watched: the failing call and its errno.
    struct Failure: Error, CustomStringConvertible {
        let call: String
        let code: Int32

        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    private let source: any DispatchSourceRead

    /// Watches the clock until `cancel()`, calling `onChange` after every change on a queue of
    /// its own; `onFailure` hears of a read that failed, after which the watch stops.
    init(
        onChange: @escaping @Sendable () -> Void,
        onFailure: @escaping @Sendable (Failure) -> Void
    ) throws(Failure) {
        let descriptor = sesame_wall_clock_watch()
        guard descriptor >= 0 else { throw Failure(call: "timerfd", code: errno) }
        let source = DispatchSource.makeReadSource(
            fileDescriptor: descriptor,
            queue: DispatchQueue(label: "io.sesame.wall-clock")
        )
        // The handler holds the source until it is cancelled (by `cancel()`, or here after a
        // failed read, which would otherwise be retried at every turn), when Dispatch lets go of
        // its handlers.
        source.setEventHandler {
            switch sesame_wall_clock_changed(descriptor) {
            case 1: onChange()
            case 0: break
            default:
                onFailure(Failure(call: "read of the wall clock's timer", code: errno))
                source.cancel()
            }
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        self.source = source
    }

    /// Stops watching and closes the timer.
    func cancel() {
        source.cancel()
    }
}
