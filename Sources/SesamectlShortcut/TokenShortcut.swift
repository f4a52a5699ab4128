import SesameWire

/// The one command line `sesamectl` answers without the rest of itself: `token ACCOUNT`, with
/// the daemon's socket as `--socket PATH` or `--socket=PATH` before or after the account. Any
/// other spelling (another option, `--help`, `--`, a second account) is left to
/// sesamectl-commands, whose parser words every usage error, so the shortcut never answers a
/// command line differently from it.
public struct TokenShortcut: Equatable, Sendable {
    /// The account, its id or name.
    public var account: String
    /// The socket given with `--socket`, or nil for where clients find sesamed by default.
    public var socket: String?

    /// The shortcut `arguments` (without the program's name) ask for, or nil when they ask for
    /// anything else.
    public init?(arguments: [String]) {
        guard arguments.first == "token" else { return nil }
        var account: String?
        var socket: String?
        var rest = arguments.dropFirst()[...]
        while let argument = rest.popFirst() {
            if argument == "--socket" {
                guard socket == nil, let value = rest.popFirst(), !value.isEmpty, !value.hasPrefix("-") else {
                    return nil
                }
                socket = value
            } else if argument.hasPrefix("--socket=") {
                let value = String(argument.dropFirst("--socket=".count))
                guard socket == nil, !value.isEmpty else { return nil }
                socket = value
            } else {
                guard account == nil, !argument.isEmpty, !argument.hasPrefix("-") else { return nil }
                account = argument
            }
        }
        guard let account else { return nil }
        self.account = account
        self.socket = socket
    }

    /// The account's access token, or nil when asking for it failed in any way (the reply an
    /// error, or its token one the scan does not read exactly): the caller hands the command
    /// line to sesamectl-commands, which asks again and words what went wrong.
    public func accessToken() -> String? {
        let reply = try? BlockingCall.call(
            Self.getToken,
            parameters: ["account": .string(account)],
            unixSocketPath: socket ?? SocketPaths.forClients()
        )
        guard let reply, reply.error == nil else { return nil }
        return reply.stringParameter("accessToken")
    }

    /// `io.sesame.Accounts.GetToken`, SesameProtocol's `AccountsContract.getToken`, named here
    /// because sesamectl links the wire alone (a unit test holds the two the same).
    public static let getToken = "io.sesame.Accounts.GetToken"
}
