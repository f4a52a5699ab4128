import CSessionBus
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The desktop's notification server (the freedesktop.org Desktop Notifications spec, 1.2) on
/// the user's session bus, through sd-bus. sd-bus blocks and is not safe to share between
/// threads, so one thread of its own owns the connection: it posts and withdraws notices as
/// they are asked for, and hands on the server's signals (an action invoked, a notice closed).
final class NotificationBus: Sendable {
    /// What the notification server said of one of our notices.
    enum Signal: Sendable, Equatable {
        /// The person chose the action `key` on notice `id` (`ActionInvoked`).
        case actionInvoked(id: UInt32, key: String)
        /// Notice `id` is gone: dismissed, expired, or withdrawn (`NotificationClosed`).
        case closed(id: UInt32)
        /// A notification server took the bus name (the bus's `NameOwnerChanged`): one that
        /// was restarted shows none of the notices posted to the one before.
        case serverStarted
    }

    /// One thing the bus thread is asked to do.
    private enum Request: Sendable {
        case post(DesktopNotice, replacing: UInt32, reply: CheckedContinuation<UInt32, any Error>)
        case withdraw(UInt32)
        case stop
    }

    /// The requests not yet taken by the bus thread, and whether it has stopped taking them.
    private let queue = Mutex<(requests: [Request], closed: Bool)>(([], false))
    /// A socket pair the bus thread polls beside the bus (the read end), so that a request
    /// written to the other end wakes the thread.
    private let wake: (read: Int32, write: Int32)
    /// The server's signals, until the bus closes.
    let signals: AsyncStream<Signal>
    private let sd: SDBus

    private init(sd: SDBus, wake: (read: Int32, write: Int32), signals: AsyncStream<Signal>) {
        self.sd = sd
        self.wake = wake
        self.signals = signals
    }

    // Closed only here, when nothing can ask any more: a descriptor closed while a request
    // could still be written to it may be another file's by then.
    deinit {
        close(wake.read)
        close(wake.write)
    }

    /// Connects to the session bus ($DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus) on a
    /// thread of its own, which loads libsystemd and then serves the connection until `stop`.
    static func connect() async throws(NotificationBusError) -> NotificationBus {
        let opened: Result<NotificationBus, NotificationBusError> = await withCheckedContinuation { started in
            DispatchQueue(label: "sesame-notify.bus").async {
                do throws(NotificationBusError) {
                    let sd = try SDBus.load()
                    var ends: [Int32] = [-1, -1]
                    let type = Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue)
                    guard socketpair(AF_UNIX, type, 0, &ends) == 0 else {
                        throw .noSessionBus(reason: String(cString: strerror(errno)))
                    }
                    let (signals, continuation) = AsyncStream<Signal>.makeStream()
                    let bus = NotificationBus(sd: sd, wake: (ends[0], ends[1]), signals: signals)
                    bus.serve(signals: continuation, started: started)
                } catch {
                    started.resume(returning: .failure(error))
                }
            }
        }
        return try opened.get()
    }

    /// Posts `notice`, in place of notice `replacing` (0: none), and returns its id.
    func post(_ notice: DesktopNotice, replacing: UInt32 = 0) async throws -> UInt32 {
        try await withCheckedThrowingContinuation { reply in
            ask(.post(notice, replacing: replacing, reply: reply))
        }
    }

    /// Withdraws notice `id` (`CloseNotification`); the server then says it closed.
    func withdraw(_ id: UInt32) {
        ask(.withdraw(id))
    }

    /// Closes the connection; `signals` ends.
    func stop() {
        ask(.stop)
    }

    private func ask(_ request: Request) {
        let taken = queue.withLock { queue in
            if !queue.closed { queue.requests.append(request) }
            return !queue.closed
        }
        guard taken else { return Self.refuse(request) }
        var one: UInt8 = 1
        _ = write(wake.write, &one, 1)
    }

    /// The requests asked for so far; with `closing`, none are taken after these.
    private func takeRequests(closing: Bool = false) -> [Request] {
        queue.withLock { queue in
            queue.closed = queue.closed || closing
            defer { queue.requests = [] }
            return queue.requests
        }
    }

    /// Answers a request the bus can no longer carry out.
    private static func refuse(_ request: Request) {
        if case .post(_, _, let reply) = request { reply.resume(throwing: NotificationBusError.closed) }
    }

    /// The bus thread: opens the connection, says whether it could, then serves it until it is
    /// stopped or the bus goes away.
    private func serve(
        signals: AsyncStream<Signal>.Continuation,
        started: CheckedContinuation<Result<NotificationBus, NotificationBusError>, Never>
    ) {
        var connection: OpaquePointer?
        let opened = sd.openUser(&connection)
        guard opened >= 0, let connection else {
            takeRequests(closing: true).forEach(Self.refuse)
            signals.finish()
            started.resume(returning: .failure(.noSessionBus(reason: String(cString: strerror(-opened)))))
            return
        }
        // Retained here and released only after the connection, and with it the match slots that
        // hand its address to the callback, is gone; the callback runs on this thread alone.
        let sink = Unmanaged.passRetained(SignalSink(signals, sd: sd))
        defer {
            _ = sd.flushCloseUnref(connection)
            sink.release()
            takeRequests(closing: true).forEach(Self.refuse)
            signals.finish()
        }
        guard watchSignals(on: connection, sink: sink.toOpaque()) else {
            started.resume(returning: .failure(.noSessionBus(reason: "the bus refused to pass on signals")))
            return
        }
        started.resume(returning: .success(self))
        var serving = true
        while serving {
            let processed = sd.process(connection, nil)
            if processed < 0 { break }
            if processed > 0 { continue }
            for request in takeRequests() {
                if serving {
                    serving = handle(
                        request,
                        on: BusConnection(sd: sd, bus: connection),
                        sink: sink.takeUnretainedValue()
                    )
                } else {
                    Self.refuse(request)
                }
            }
            if serving && !waitForWork(on: connection) { break }
        }
    }

    /// Does one request; false for `stop`.
    private func handle(_ request: Request, on connection: BusConnection, sink: SignalSink) -> Bool {
        switch request {
        case .post(let notice, let replacing, let reply):
            do {
                let posted = try notice.post(on: connection, replacing: replacing)
                sink.trust(posted.server)
                reply.resume(returning: posted.id)
            } catch {
                reply.resume(throwing: error)
            }
        case .withdraw(let id):
            try? DesktopNotice.withdraw(id, on: connection)
        case .stop:
            return false
        }
        return true
    }

    /// Subscribes to the server's two signals about notices; they reach `sink`.
    private func watchSignals(on connection: OpaquePointer, sink: UnsafeMutableRawPointer) -> Bool {
        // Any sender: a match on the well-known name would be resolved by the bus daemon, but
        // the signals carry the server's unique name, which sd-bus compares them with here
        // (SignalSink checks the sender itself).
        let matches = [
            (DesktopNotice.objectPath, DesktopNotice.interface, "ActionInvoked"),
            (DesktopNotice.objectPath, DesktopNotice.interface, "NotificationClosed"),
            (SignalSink.busPath, SignalSink.bus, "NameOwnerChanged"),
        ]
        return matches.allSatisfy { path, interface, member in
            sd.matchSignal(
                connection,
                nil,
                nil,
                path,
                interface,
                member,
                { message, userdata, _ in
                    guard let message, let userdata else { return 0 }
                    Unmanaged<SignalSink>.fromOpaque(userdata).takeUnretainedValue().receive(message)
                    return 0
                },
                sink
            ) >= 0
        }
    }

    /// Sleeps until the bus or a request needs this thread, or the bus's own timeout; false
    /// when the bus is gone.
    private func waitForWork(on connection: OpaquePointer) -> Bool {
        let events = sd.getEvents(connection)
        guard events >= 0 else { return false }
        var until: UInt64 = .max
        _ = sd.getTimeout(connection, &until)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        let milliseconds: Int32 =
            until == .max ? -1 : Int32(clamping: (until > nowMicroseconds ? until - nowMicroseconds : 0) / 1000)
        var descriptors = [
            pollfd(fd: sd.getFD(connection), events: Int16(events), revents: 0),
            pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
        ]
        _ = poll(&descriptors, 2, milliseconds)
        var drained = [UInt8](repeating: 0, count: 64)
        while read(wake.read, &drained, drained.count) > 0 {}
        return true
    }
}

/// Hands the server's signals from the bus thread's C callback to the stream.
