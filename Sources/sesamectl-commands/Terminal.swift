import FoundationEssentials
import SesameWire

#if canImport(Glibc)
    import Glibc
#endif

/// What sesamectl may do on one output stream: draw (escape codes, a live line) only on a
/// terminal, and colour only on a terminal when NO_COLOR is not set (https://no-color.org).
struct Terminal: Sendable {
    /// The stream, STDOUT_FILENO or STDERR_FILENO.
    let descriptor: Int32
    /// Whether the stream is a terminal.
    let isTerminal: Bool
    /// Whether colours and bold may be used.
    let colours: Bool

    /// What `descriptor` is, as the environment asks.
    init(_ descriptor: Int32, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.descriptor = descriptor
        isTerminal = isatty(descriptor) == 1
        // NO_COLOR: "when present and not an empty string", whatever its value.
        colours = isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
    }

    /// The terminal's size in character cells (TIOCGWINSZ); nil off a terminal or when it does
    /// not say.
    var size: (columns: Int, lines: Int)? {
        guard isTerminal else { return nil }
        var window = winsize()
        guard ioctl(descriptor, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0 else {
            return nil
        }
        return (Int(window.ws_col), Int(window.ws_row))
    }

    /// Writes `text` and a newline.
    func line(_ text: String) {
        Output.write(text + "\n", to: descriptor)
    }

    /// `text` in SGR `code` (1 bold, 31 red, 32 green, 33 yellow, 2 faint) when colours may
    /// be used; `text` alone otherwise.
    func styled(_ text: String, _ code: String) -> String {
        colours ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    /// Moves to the start of the line and clears it: what a live line is replaced with.
    static let clearLine = "\r\u{1B}[K"

    /// A time left as m:ss, or h:mm:ss from an hour on; never negative.
    static func countdown(_ seconds: Int) -> String {
        let left = max(0, seconds)
        let (hours, minutes, rest) = (left / 3600, left / 60 % 60, left % 60)
        func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(rest))" : "\(minutes):\(twoDigits(rest))"
    }
}
