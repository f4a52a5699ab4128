import Glibc
import SesameWire

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
    /// 127 (not found) or 126. Only a copy no other user can have placed or changed is run
    /// (`ProgramTrust`): sesamectl copied into a shared directory must not run what another
    /// user put beside it.
    static func run() -> Never {
        guard let directory = ownDirectory() else {
            // Never a path relative to the working directory: that would run whatever lies there.
            fail(path: "/proc/self/exe", code: errno)
        }
        let paths = candidates(besides: directory)
        var refusal: String?
        for path in paths where ProgramTrust.withCString(path, { access($0, F_OK) }) == 0 {
            var resolved: [UInt8] = []
            if let reason = ProgramTrust.distrust(of: path, caller: getuid(), resolved: &resolved) {
                refusal = refusal ?? reason
                continue
            }
            _ = ProgramTrust.withCString(resolved) { execv($0, CommandLine.unsafeArgv) }
            fail(path: ProgramTrust.text(path), code: errno)
        }
        if let refusal { refuse(because: refusal) }
        fail(path: ProgramTrust.text(paths[1]), code: ENOENT)
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

    private static func refuse(because reason: String) -> Never {
        Output.write(
            "sesamectl: will not run \(name): \(reason), so another user may have put it there. "
                + "Run the installed sesamectl, or keep this copy in a directory of your own beside a "
                + "\(name) of your own.\n",
            to: STDERR_FILENO
        )
        exit(126)
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
}
