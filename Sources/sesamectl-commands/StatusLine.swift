import Dispatch
import FoundationEssentials
import SesameWire
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The one live line of a login on a terminal: a spinner, what is going on (or what troubles
/// the provider) and the time left, redrawn in place until `stop` clears it for the outcome.
/// Off a terminal it draws nothing, and trouble is said once per change as a line on stderr.
final class StatusLine: Sendable {
    private struct State {
        var trouble: String?
        var frame = 0
        var stopped = false
    }

    private static let frames = Array("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
    private let terminal: Terminal
    private let waiting: String
    private let deadline: Date
    private let deadlineLabel: String
    private let state = Mutex(State())

    /// A line saying `waiting` and "`deadlineLabel` m:ss" until `deadline`.
    init(on terminal: Terminal, waiting: String, deadline: Date, deadlineLabel: String) {
        self.terminal = terminal
        self.waiting = waiting
        self.deadline = deadline
        self.deadlineLabel = deadlineLabel
    }

    /// Redraws the line about ten times a second until cancelled or stopped.
    func run() async {
        guard terminal.isTerminal else { return }
        while !Task.isCancelled {
            guard draw() else { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Shows `trouble` in place of the waiting text; nil when it has passed.
    func set(trouble: String?) {
        let changed = state.withLock { state in
            defer { state.trouble = trouble }
            return state.trouble != trouble && !state.stopped
        }
        guard changed else { return }
        if terminal.isTerminal {
            _ = draw()
        } else if let trouble {
            printError("sesamectl: \(trouble)")
        }
    }

    /// Clears the line for good, so that what is printed next starts a clean line.
    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            if terminal.isTerminal { Output.write(Terminal.clearLine, to: terminal.descriptor) }
        }
    }

    /// Draws the next frame; false once stopped.
    private func draw() -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            let spinner = Self.frames[state.frame % Self.frames.count]
            state.frame += 1
            let left = Terminal.countdown(Int(deadline.timeIntervalSinceNow.rounded(.up)))
            let tail = " · \(deadlineLabel) \(left)"
            var doing = state.trouble ?? waiting
            // A line wider than the terminal would wrap, and \r would then redraw only its end.
            if let columns = terminal.size?.columns, 2 + doing.count + tail.count >= columns {
                doing = String(doing.prefix(max(0, columns - 3 - tail.count)))
            }
            if state.trouble != nil { doing = terminal.styled(doing, "33") }
            Output.write(Terminal.clearLine + "\(spinner) \(doing)\(tail)", to: terminal.descriptor)
            return true
        }
    }
}

/// Ctrl-C during a login: the live line is cleared, "login cancelled" said, and sesamectl ends
/// with 130 (128 + SIGINT, as a shell reports it); its connection closes with it, which is how
/// sesamed learns that the login is cancelled and stops polling the provider.
final class InterruptHandler: Sendable {
    private let line = Mutex<StatusLine?>(nil)

    /// The line to clear on Ctrl-C, from now on.
    func clears(_ statusLine: StatusLine?) {
        line.withLock { $0 = statusLine }
    }

    /// Runs `body` with SIGINT handled as above, even when sesamectl started with it ignored
    /// (a job a script put in the background still gets its login cancelled by `kill -INT`);
    /// the disposition it started with is back afterwards, so `exec --login`'s command gets
    /// the one a shell gave sesamectl, not a default of our making.
    func during<T>(_ body: () async throws -> T) async rethrows -> T {
        let previous = signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [self] in
            line.withLock { $0?.stop() }
            printError("login cancelled")
            // _exit: this runs on a dispatch thread while the main task still runs, so no
            // atexit handler or static destructor may race it; the output is already written.
            _exit(128 + SIGINT)
        }
        source.resume()
        defer {
            source.cancel()
            signal(SIGINT, previous)
        }
        return try await body()
    }
}
