import Glibc

/// sesamectl's only way to standard output and standard error (both of its programs'):
/// write(2) until every byte is out. When the reader has gone away (`sesamectl watch | head`),
/// sesamectl ends the way `yes | head` ends `yes`: killed by SIGPIPE, status 141 in the shell,
/// nothing printed.
public enum Output {
    /// Writes all of `text` to `descriptor`, retrying after signals and short writes; false when
    /// the rest could not be written.
    @discardableResult
    public static func write(_ text: String, to descriptor: Int32) -> Bool {
        Array(text.utf8).withUnsafeBytes { buffer in
            guard let start = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, start + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                switch written < 0 ? errno : 0 {
                case EINTR: continue
                case EAGAIN: waitUntilWritable(descriptor)
                case EPIPE: endOnClosedPipe()
                // Anything else (a full disk, EIO, a zero-byte write): the output is lost either
                // way, and retrying could spin; give it up rather than crash or hang.
                default: return false
                }
            }
            return true
        }
    }

    /// For a descriptor someone left non-blocking: waits until it takes bytes again.
    private static func waitUntilWritable(_ descriptor: Int32) {
        var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        _ = poll(&poller, 1, -1)
    }

    /// Ends the process by SIGPIPE. SwiftNIO sets SIGPIPE to "ignore" for the whole process the
    /// first time it opens a socket (Linux has no per-socket switch), which is why a write to a
    /// closed pipe returns EPIPE here instead of ending the process; so the default action is put
    /// back, the signal unblocked in this thread, and raised.
    private static func endOnClosedPipe() -> Never {
        signal(SIGPIPE, SIG_DFL)
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        pthread_sigmask(SIG_UNBLOCK, &pipeOnly, nil)
        raise(SIGPIPE)
        // Not reached: the default action of SIGPIPE ends the process. Should it ever return,
        // the status is still the shell's 128 + SIGPIPE.
        _exit(128 + SIGPIPE)
    }
}
