import Glibc
import SesameWire

/// Writes one line to standard error.
func printError(_ line: String) {
    Output.write(line + "\n", to: STDERR_FILENO)
}

/// Writes one line to standard output at once (unbuffered), so pipes see each line as it happens.
func printLine(_ line: String) {
    Output.write(line + "\n", to: STDOUT_FILENO)
}
