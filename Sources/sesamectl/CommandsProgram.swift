import Glibc
import SesameOneShot

/// sesamectl-commands, the program with every command of sesamectl's, which this one runs in its
/// own place for every command line but the shortcuts.
enum CommandsProgram {
    /// Its file name.
    static let name = "sesamectl-commands"

    /// Where it may be, from this program's own directory: beside it (a build, or an install that
    /// keeps both in one directory), else in `../libexec/sesame` (`/usr/bin/sesamectl` and
    /// `/usr/libexec/sesame/sesamectl-commands`, as scripts/install and the package lay them out).
    /// Paths as bytes: a directory's name need not be UTF-8.
    static func candidates(besides directory: [UInt8]) -> [[UInt8]] {
        [directory + Array("/\(name)".utf8), directory + Array("/../libexec/sesame/\(name)".utf8)]
    }

    /// Replaces this process with sesamectl-commands, with this process's own arguments byte for
    /// byte (its name among them); when that cannot be done, says so and exits with the shell's
    /// 127 (not found) or 126.
    static func run() -> Never {
        guard let directory = ownDirectory() else {
            // Never a path relative to the working directory: that would run whatever lies there.
            fail(path: "/proc/self/exe", code: errno)
        }
        let paths = candidates(besides: directory).map { $0 + [0] }
        // The first that runs; else the first there is, or else the installed place, to name.
        let path =
            paths.first { withCString($0) { access($0, X_OK) } == 0 }
            ?? paths.first { withCString($0) { access($0, F_OK) } == 0 } ?? paths[1]
        _ = withCString(path) { execv($0, CommandLine.unsafeArgv) }
        fail(path: String(decoding: path.dropLast(), as: UTF8.self), code: errno)
    }

    private static func fail(path: String, code: CInt) -> Never {
        let reason = String(cString: strerror(code))
        Output.write(
            "sesamectl: cannot run \(name) (\(path): \(reason)), which has every command but "
                + "`token ACCOUNT`; reinstall Sesame, or build both programs (swift build --product \(name)).\n",
            to: STDERR_FILENO
        )
        exit(code == ENOENT ? 127 : 126)
    }

    /// The directory this program's file is in, from /proc/self/exe (a symlink to it, or a name
    /// found on $PATH, would not say); nil when that cannot be read.
    private static func ownDirectory() -> [UInt8]? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let path = buffer[..<length].map { UInt8(bitPattern: $0) }
        guard let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        return Array(path[..<max(slash, 1)])
    }

    /// Calls `body` with `bytes` (NUL-terminated) as a C string.
    private static func withCString<Result>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        bytes.withUnsafeBufferPointer { buffer in
            // `bytes` holds at least its NUL, so the buffer has a base address.
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
