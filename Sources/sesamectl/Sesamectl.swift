import Glibc
import SesameOneShot

/// `sesamectl`: prints an account's token at once for `sesamectl token ACCOUNT`, the command
/// scripts and other tools run most, and its version for `sesamectl --version`, and runs
/// sesamectl-commands in its place for everything else (the same process, the same arguments).
@main
enum Sesamectl {
    /// What the shortcut's GetToken came to.
    private enum Outcome {
        case token(String)
        /// No token: sesamectl-commands words the failure it is handed, or asks again when nil.
        case failed(HandedOverFailure?)
    }

    /// Answers a shortcut when it can, else hands the command line over.
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.elementsEqual(["--version"]) {
            exit(Output.write(SesameVersion.current + "\n", to: STDOUT_FILENO) ? 0 : 1)
        }
        var failure: HandedOverFailure?
        if let shortcut = TokenShortcut(arguments: Array(arguments)) {
            switch accessToken(shortcut) {
            case .token(let token): exit(Output.write(token + "\n", to: STDOUT_FILENO) ? 0 : 1)
            case .failed(let handed): failure = handed
            }
        }
        HandedOverFailure.pass(failure)
        CommandsProgram.run()
    }

    /// The account's access token, or how asking for it failed. A failure is not worded here:
    /// sesamectl-commands says what went wrong and what to do next (the login command, which
    /// names the account's provider, or how to start sesamed), in the same words as for every
    /// other command. A reply that is neither a token nor an error (which cannot be handed on
    /// without a token possibly in it), or a token with an escape in its text, is left for it to
    /// ask again.
    private static func accessToken(_ shortcut: TokenShortcut) -> Outcome {
        let received: [UInt8]
        do {
            received = try OneShotExchange.exchange(
                GetTokenWire.frame(account: shortcut.account),
                unixSocketPath: shortcut.socket ?? SocketPaths.forClients()
            )
        } catch {
            return .failed(.noReply(error))
        }
        switch GetTokenWire.reply(received) {
        case .token(let token): return .token(token)
        case .error:
            let fits = received.count <= HandedOverFailure.maximumReplySize
            return .failed(fits ? .reply(String(decoding: received, as: UTF8.self)) : nil)
        case .unread: return .failed(nil)
        }
    }
}
