/// The one command line `sesamectl` answers without the rest of itself: `token ACCOUNT`, with
/// the daemon's socket as `--socket PATH` or `--socket=PATH` before or after the account. Any
/// other spelling (another option, `--help`, `--`, a second account, an account with a quote, a
/// backslash or a control character in it) is left to sesamectl-commands, whose parser words
/// every usage error, so the shortcut never answers a command line differently from it.
package struct TokenShortcut: Equatable {
    /// The account, its id or name.
    package var account: String
    /// The socket given with `--socket`, or nil for where clients find sesamed by default.
    package var socket: String?

    /// The shortcut `arguments` (without the program's name) ask for, or nil when they ask for
    /// anything else.
    package init?(arguments: [String]) {
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
                guard account == nil, !argument.isEmpty, !argument.hasPrefix("-"), GetTokenWire.fitsUnescaped(argument)
                else { return nil }
                account = argument
            }
        }
        guard let account else { return nil }
        self.account = account
        self.socket = socket
    }
}
