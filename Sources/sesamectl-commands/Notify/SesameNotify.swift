import ArgumentParser
import SesameClient
import SesameCore
import SesameWire

/// `sesame-notify`: tells a person at their desktop when one of their accounts needs them,
/// with Desktop Notifications on the session bus. A name of sesamectl-commands, which runs this
/// when it is started under that name (the user unit sesame-notify.service does).
struct SesameNotify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sesame-notify",
        abstract: "Show a desktop notice when one of your accounts needs a new login.",
        discussion: """
            Follows the accounts you may see at sesamed and posts a notice on the session bus \
            (org.freedesktop.Notifications) when one needs a new login, and when its login ends \
            within a week. There is one notice per account and cause, replaced rather than \
            stacked, withdrawn once the account works again, and posted again when the \
            notification server is restarted. Clicking it starts \
            `sesamectl login PROVIDER --browser`, whose page opens in your browser, where the \
            provider offers a browser login; otherwise the notice says what to run in a \
            terminal. Without a session bus it says so once and exits 0. Runs as the user unit \
            sesame-notify.service, started with the graphical session.
            """,
        version: SesameVersion.current
    )

    @Option(name: .long, help: "The daemon's socket (default: $SESAME_SOCKET, the user daemon's, or the system's).")
    var socket: String?

    func run() async throws {
        let bus: NotificationBus
        do {
            bus = try await NotificationBus.connect()
        } catch {
            // A session without a desktop (a server, an ssh login): nothing to do, and no failure.
            printError("sesame-notify: \(error); no desktop notices will be shown.")
            return
        }
        var notifier = Notifier(bus: bus, socket: socket)
        let ended = await notifier.run()
        bus.stop()
        // Not ended by the session: a failure, for systemd to restart it after.
        if !ended { throw ExitCode.failure }
    }
}
