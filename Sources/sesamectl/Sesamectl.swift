import FoundationEssentials
import Glibc
import SesameOneShot

/// `sesamectl`: prints an account's token at once for `sesamectl token ACCOUNT`, the command
/// scripts and other tools run most, and its version for `sesamectl --version`, and runs
/// sesamectl-commands in its place for everything else (the same process, the same arguments).
@main
enum Sesamectl {
    /// The GetToken method of `io.sesame.Accounts` (SesameProtocol's `AccountsContract.getToken`,
    /// which this program does not link; the end-to-end tests run it against sesamed).
    static let getToken = "io.sesame.Accounts.GetToken"

    /// Answers the shortcut when it can, else hands the command line over.
    static func main() {
        let arguments = CommandLine.arguments
        if arguments.dropFirst().elementsEqual(["--version"]) {
            exit(Output.write(SesameVersion.current + "\n", to: STDOUT_FILENO) ? 0 : 1)
        }
        if let shortcut = TokenShortcut(arguments: Array(arguments.dropFirst())), let token = accessToken(shortcut) {
            exit(Output.write(token + "\n", to: STDOUT_FILENO) ? 0 : 1)
        }
        CommandsProgram.run(arguments)
    }

    /// The account's access token, or nil on any failure. A failure is not worded here: the
    /// hand-over asks again, and sesamectl-commands says what went wrong and what to do next
    /// (the login command, which names the account's provider, or how to start sesamed), in
    /// the same words as for every other command. Asking twice never asks the provider twice:
    /// after a refresh that failed sesamed backs off, and answers the second GetToken from that
    /// (the token expired; `sesamectl refresh` tries again and says why), with the same status.
    private static func accessToken(_ shortcut: TokenShortcut) -> String? {
        struct Reply: Decodable {
            struct Issued: Decodable { var accessToken: String }
            var error: String?
            var parameters: Issued?
        }
        do {
            let frame = try OneShotExchange.frame(method: getToken, parameters: ["account": shortcut.account])
            let received = try OneShotExchange.exchange(
                frame,
                unixSocketPath: shortcut.socket ?? SocketPaths.forClients()
            )
            let reply = try JSONCoding.decode(Reply.self, from: Data(received))
            return reply.error == nil ? reply.parameters?.accessToken : nil
        } catch {
            return nil
        }
    }
}
