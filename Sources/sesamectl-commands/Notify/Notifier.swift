import FoundationEssentials
import SesameClient
import SesameCore
import SesameProtocol

/// sesame-notify's one loop: sesamed's events and the notification server's signals, taken one
/// at a time, so the notice board needs no lock.
struct Notifier {
    /// Something the loop acts on.
    enum Input: Sendable {
        case update(SubscriptionUpdate)
        case signal(NotificationBus.Signal)
        /// The login a click started for `account` ended, with this wait status.
        case loginEnded(account: String, status: Int32)
        /// The events ended for good (an error reconnecting cannot fix: `failed`), or the bus
        /// closed (the session ended).
        case finished(String, failed: Bool)
    }

    let bus: NotificationBus
    let socket: String?
    private var board = NoticeBoard()
    private var client: SesameClient?
    private var loginsUnderWay: Set<String> = []
    /// Whether the last post failed, so that an outage of the server is said once.
    private var serverFailing = false

    init(bus: NotificationBus, socket: String?) {
        self.bus = bus
        self.socket = socket
    }

    /// Runs until the session bus closes or sesamed's events end for good; false for the latter.
    mutating func run() async -> Bool {
        let (inputs, continuation) = AsyncStream<Input>.makeStream()
        let events = Task { [socket] in
            do {
                for try await update in SesameClient.followEvents(socketPath: socket) {
                    continuation.yield(.update(update))
                }
                continuation.yield(.finished("sesamed's events ended", failed: true))
            } catch {
                continuation.yield(.finished("cannot follow sesamed's events: \(error)", failed: true))
            }
        }
        let signals = Task { [bus] in
            for await signal in bus.signals { continuation.yield(.signal(signal)) }
            continuation.yield(.finished("the session bus closed", failed: false))
        }
        defer {
            events.cancel()
            signals.cancel()
        }
        var ended = true
        for await input in inputs {
            if case .finished(let why, let failed) = input {
                printError("sesame-notify: \(why); stopping.")
                ended = !failed
                break
            }
            await handle(input, continuation)
        }
        await client?.close()
        return ended
    }

    private mutating func handle(_ input: Input, _ inputs: AsyncStream<Input>.Continuation) async {
        switch input {
        case .update(.ready):
            // At start and after each reconnection: whatever happened meanwhile is in the list.
            await reconcile(nil)
        case .update(.reconnecting):
            return
        case .update(.resync(_, let accounts)):
            await reconcile(accounts)
        case .update(.event(let event)):
            let needsAccount = event.kind == .needsLogin || event.kind == .refreshTokenExpiring
            let account = needsAccount ? await ask { try await $0.account(event.account) } : nil
            let provider =
                needsAccount ? await ask { try await $0.providers() }?.first { $0.name == event.provider } : nil
            await apply(board.steps(for: event, account: account, provider: provider))
        case .signal(.actionInvoked(let id, let key)):
            guard key == DesktopNotice.defaultAction, let notice = board.key(of: id) else { return }
            await startLogin(of: notice.account, inputs)
        case .signal(.closed(let id)):
            board.forget(id: id)
        case .signal(.serverStarted):
            // Its notices went with the server before it: all are posted again.
            board.forgetAll()
            await reconcile(nil)
        case .loginEnded(let account, let status):
            loginsUnderWay.remove(account)
            if status != 0 { printError("sesame-notify: the login of \(account) a notice started did not finish") }
        case .finished:
            return
        }
    }

    /// Brings the board in line with the accounts as they are (read now, unless given).
    private mutating func reconcile(_ given: [Account]?) async {
        let accounts: [Account]?
        if let given { accounts = given } else { accounts = await ask { try await $0.accounts() } }
        guard let accounts else { return }
        let providers = await ask { try await $0.providers() } ?? []
        await apply(board.steps(reconciling: accounts, providers: providers, now: Date()))
    }

    private mutating func apply(_ steps: [NoticeBoard.Step]) async {
        for step in steps {
            switch step {
            case .post(let key, let notice):
                do {
                    let id = try await bus.post(notice, replacing: board.shown[key] ?? 0)
                    board.show(key, as: id)
                    serverFailing = false
                } catch {
                    if !serverFailing { printError("sesame-notify: \(error); the next notice tries again.") }
                    serverFailing = true
                }
            case .withdraw(_, let id):
                bus.withdraw(id)
                board.forget(id: id)
            }
        }
    }

    /// Starts `sesamectl login PROVIDER --browser` for the account, once at a time: this very
    /// program under sesamectl's name, whose login opens the browser itself.
    private mutating func startLogin(of id: String, _ inputs: AsyncStream<Input>.Continuation) async {
        guard !loginsUnderWay.contains(id), let account = await ask({ try await $0.account(id) }) else { return }
        let arguments =
            ["sesamectl", "login", account.provider, "--browser"] + (socket.map { ["--socket", $0] } ?? [])
        let started = ChildProcess.spawn("/proc/self/exe", arguments: arguments, quiet: false) { status in
            inputs.yield(.loginEnded(account: id, status: status))
        }
        if started { loginsUnderWay.insert(id) } else { printError("sesame-notify: cannot start sesamectl login") }
    }

    /// One call to sesamed on the loop's connection, made again on a new one if it was lost;
    /// nil when sesamed cannot answer now (the events say when it is back).
    private mutating func ask<Answer>(_ call: (SesameClient) async throws -> Answer) async -> Answer? {
        for _ in 0..<2 {
            do {
                let connected: SesameClient
                if let client {
                    connected = client
                } else {
                    connected = try await SesameClient.connect(socketPath: socket)
                }
                client = connected
                return try await call(connected)
            } catch SesameError.disconnected, SesameError.cannotConnect, SesameError.busy {
                await client?.close()
                client = nil
            } catch {
                return nil
            }
        }
        return nil
    }
}
