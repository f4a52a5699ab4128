import Glibc
import SesameOneShot

/// sesamectl-commands, the program with every command of sesamectl's, which this one runs in its
/// own place for every command line but the token shortcut.
enum CommandsProgram {
    /// Its file name.
    static let name = "sesamectl-commands"

    /// Where it is, from this program's own directory: beside it (a build, or an install that
    /// keeps both in one directory), else in `../libexec/sesame` (`/usr/bin/sesamectl` and
    /// `/usr/libexec/sesame/sesamectl-commands`, as scripts/install and the package lay them out).
    static func candidates(besides directory: String) -> [String] {
        [directory + "/" + name, directory + "/../libexec/sesame/" + name]
    }

    /// Replaces this process with sesamectl-commands and `arguments` (the program's name kept);
    /// when that cannot be done, says so and exits with the shell's 127 (not found) or 126.
    static func run(_ arguments: [String]) -> Never {
        let directory = ownDirectory()
        let paths = candidates(besides: directory)
        let path = paths.first { access($0, X_OK) == 0 } ?? paths[paths.count - 1]
        var argv = arguments.map { strdup($0) }
        argv.append(nil)
        execv(path, argv)
        let code = errno
        let reason = String(cString: strerror(code))
        Output.write(
            "sesamectl: cannot run \(path) (\(reason)), which has every command but `token ACCOUNT`; "
                + "reinstall Sesame, or build both programs (swift build --product sesamectl-commands).\n",
            to: STDERR_FILENO
        )
        exit(code == ENOENT ? 127 : 126)
    }

    /// The directory this program's file is in, from /proc/self/exe (a symlink to it, or a name
    /// found on $PATH, would not say).
    private static func ownDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return "." }
        let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
