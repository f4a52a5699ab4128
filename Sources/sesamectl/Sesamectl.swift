import Glibc
import SesameWire
import SesamectlShortcut

/// `sesamectl`: prints an account's token at once for `sesamectl token ACCOUNT`, the command
/// scripts and other tools run most, and its version for `sesamectl --version`, and runs
/// sesamectl-commands in its place for everything else (the same process, the same arguments),
/// a GetToken that failed included: that program asks again and words what went wrong and what
/// to do next (the login command, which names the account's provider, or how to start sesamed).
/// (A refresh that failed is not tried again by that second call: sesamed backs off after a
/// failed refresh.)
@main
enum Sesamectl {
    /// Answers a shortcut when it can, else hands the command line over.
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.elementsEqual(["--version"]) {
            exit(Output.write(SesameVersion.current + "\n", to: STDOUT_FILENO) ? 0 : 1)
        }
        if let shortcut = TokenShortcut(arguments: Array(arguments)), let token = shortcut.accessToken() {
            exit(Output.write(token + "\n", to: STDOUT_FILENO) ? 0 : 1)
        }
        CommandsProgram.run()
    }
}
