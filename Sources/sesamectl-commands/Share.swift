import ArgumentParser
import Dispatch
import FoundationEssentials
import SesameClient
import SesameProtocol

/// `sesamectl share`: serves some accounts' access tokens on a socket of the user's, for a
/// container or a host across `ssh -R`, and nothing else.
struct Share: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Offer accounts' access tokens on a socket of your own, for a container or a remote host.",
        discussion: """
            Runs until interrupted, until --for runs out, or until a shared account is logged out \
            or removed; the socket is removed then. Programs that connect to it (SESAME_SOCKET=PATH \
            sesamectl token NAME, git-credential-sesame, SesameClient) get the accounts' access \
            tokens, their state and their events, and may report a token rejected; nothing else: \
            no refresh token, no ID token unless --id-token, no other account, no logout, login, \
            refresh or removal. Who may connect is the socket file's permission (--mode, --group), \
            as for ssh-agent's socket: behind `ssh -R` or in a container the connecting process's \
            uid says nothing. sesamed logs the share's start and end and each token handed out. \
            Forward it with `ssh -R /run/user/ID/sesame.sock:PATH host`, or bind-mount PATH into a \
            container.
            """
    )

    @Argument(help: "The accounts to share (ids or names).", completion: .accountIDs)
    var accounts: [String]

    @Option(name: .customLong("socket"), help: "Where to serve the share (a path for a new Unix socket).")
    var path: String

    @Option(name: .customLong("for"), help: "End the share after this long: 90s, 30m, 8h or 2d.")
    var duration: ShareDuration?

    @Option(help: "The socket's permission bits: 0600 (the default) for you alone, or 0660 for a group too.")
    var mode: SocketMode = SocketMode(bits: 0o600)

    @Option(help: "The group the socket belongs to, for --mode 0660.")
    var group: String?

    @Flag(help: "Also pass on the accounts' ID tokens (GetIDToken).")
    var idToken = false

    @Option(name: .customLong("daemon-socket"), help: "sesamed's socket (default: as for every other command).")
    var daemonSocket: String?

    func run() async throws {
        try await reportingFailures {
            let gid = try group.map(SharedSocket.groupID(named:))
            let options = try GlobalOptions.parse(daemonSocket.map { ["--socket", $0] } ?? [])
            let client = try await options.connect()
            let updates = try await client.share(
                accounts,
                expiresIn: duration?.seconds,
                idToken: idToken,
                socket: path
            )
            var iterator = updates.makeAsyncIterator()
            guard case .opened(let share)? = try await iterator.next() else {
                throw ExitError.message("sesamed did not open the share")
            }
            let socket = try SharedSocket(preparing: path)
            // Before the socket exists, so no signal can leave it behind.
            let signals = socket.removeOnSignals()
            let relay = try await ShareRelay.start(
                at: socket,
                mode: mode.bits,
                group: gid,
                share: share.id,
                daemonSocket: options.socket ?? SesameClient.defaultSocketPath()
            )
            printError(Self.started(share, accounts: accounts, at: socket.path))
            let reason = await Self.end(of: &iterator)
            signals.forEach { $0.cancel() }
            relay.close()
            socket.remove()
            printError("share ended: \(reason); \(socket.path) is removed.")
        }
    }

    /// Waits for the share to end, and says why.
    private static func end(of updates: inout AsyncThrowingStream<ShareUpdate, any Error>.Iterator) async -> String {
        do {
            while let update = try await updates.next() {
                if case .ended(let reason) = update { return reason }
            }
            return "sesamed closed the connection"
        } catch let error as SesameError {
            return error.sentence
        } catch {
            return "\(error)"
        }
    }

    /// The line that says the share is open, where, until when and how to use it.
    private static func started(_ share: ShareInfo, accounts: [String], at socket: String) -> String {
        let until = share.expiresAt.map { " until \(Formatting.time($0))" } ?? ""
        return "sharing \(accounts.joined(separator: ", ")) on \(socket)\(until); "
            + "use it with SESAME_SOCKET=\(socket). Ctrl-C ends the share."
    }
}

/// How long a share lasts: a number with s, m, h or d.
struct ShareDuration: ExpressibleByArgument {
    let seconds: Int

    /// Reads 90s, 30m, 8h or 2d (at most a year).
    init?(argument: String) {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let unit = argument.last, let scale = units[unit], let count = Int(argument.dropLast()), count > 0,
            count <= 366 * 86400 / scale
        else { return nil }
        seconds = count * scale
    }
}

/// A share socket's permission bits, given in octal: the owner's, and maybe a group's; never
/// every user's, which would hand the accounts' tokens to anyone on the machine.
struct SocketMode: ExpressibleByArgument {
    let bits: UInt16

    /// The bits as they are.
    init(bits: UInt16) { self.bits = bits }

    /// 0600 or 0660 (0640 and 0620 too, though a client needs to write as well as read).
    init?(argument: String) {
        // Read and write are what a socket's bits mean; anything else is a typo.
        guard let bits = UInt16(argument, radix: 8), bits & ~0o660 == 0, bits & 0o600 == 0o600 else { return nil }
        self.bits = bits
    }

    var defaultValueDescription: String { "0" + String(bits, radix: 8) }
}
