import FoundationEssentials
import Logging
import SesameCore
import SesameProtocol
import SesameProviders
import SesameVarlink
import SesameWire

/// `io.sesame.Shares`: opening a share of some accounts (`Open`, held for the share's life by the
/// owner's relay, `sesamectl share`) and making a connection the share's (`Join`). The relay is
/// the owner's own process, so a share reaches no further than its owner: what it adds is a
/// limit (`ShareConsumer`), enforced here, on connections whose peer the relay vouches for.
struct SharesInterface: VarlinkInterface {
    let name = SharesContract.interface
    let interfaceDescription: String
    let engine: DaemonEngine
    let trust: Trust
    let shares: Shares
    /// The longest a share may last: a year.
    static let longestExpiry = 366 * 24 * 3600
    /// How much of a requested socket path the log shows: enough to tell one from another.
    static let loggedPathLimit = 256

    /// The method table.
    var methods: VarlinkMethods {
        var methods = VarlinkMethods(of: name)
        methods.on(SharesContract.open) { try await open($0, $1) }
        methods.on(SharesContract.join) { try join($0, $1) }
        return methods
    }

    /// `Open`: the share as opened, then, when it ends, why.
    private func open(_ request: OpenShareParameters, _ context: VarlinkCallContext) async throws -> OpenShareReply {
        let caller = Caller(context, trust: trust)
        guard (1...Shares.accountsPerShare).contains(request.accounts.count) else {
            throw VarlinkError.invalidParameter("accounts")
        }
        if let seconds = request.expiresIn, !(1...Self.longestExpiry).contains(seconds) {
            throw VarlinkError.invalidParameter("expiresIn")
        }
        // Only logged: a path's length, and no control character that could forge a line of
        // its own in a plain-text log; what is logged is escaped and cut shorter still.
        if let socket = request.socket,
            socket.utf8.count > 4096
                || socket.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            throw VarlinkError.invalidParameter("socket")
        }
        let accounts = try request.accounts.map { try engine.account($0, for: caller, requiring: .use).id }
        let share = Share(
            owner: caller.peer.uid,
            accounts: Set(accounts),
            idToken: request.idToken ?? false,
            expiresAt: request.expiresIn.map { engine.clock.now.addingTimeInterval(TimeInterval($0)) }
        )
        try shares.add(share)
        defer { shares.remove(share) }
        let logger = context.logger
        share.log(
            "share started",
            [
                "accounts": "\(share.accounts.sorted().joined(separator: ","))",
                "socket": "\(request.socket.map { ProviderText.sanitized($0, limit: Self.loggedPathLimit) } ?? "-")",
                "id_token": "\(share.idToken)", "expires_at": "\(share.expiresAt.map { "\($0)" } ?? "-")",
            ],
            logger
        )
        do {
            try await context.send(VarlinkReply(OpenShareReply(share: share.info)))
            share.end(try await endOf(share))
        } catch {
            // The relay hung up (or the daemon stops): the share ends with the call.
            share.end("the share's relay hung up, or sesamed is stopping")
            Self.logEnd(of: share, logger)
            throw error
        }
        Self.logEnd(of: share, logger)
        return OpenShareReply(ended: share.endReason)
    }

    /// Logs the share's end and its reason.
    private static func logEnd(of share: Share, _ logger: Logger) {
        share.log("share ended", ["reason": "\(share.endReason ?? "-")"], logger)
    }

    /// Waits until `share` must end and says why: one of its accounts was logged out or
    /// removed, or its time ran out. Throws when the call is cancelled (the relay hung up).
    private func endOf(_ share: Share) async throws -> String {
        let filter = EventFilter(accounts: share.accounts, kinds: [.loggedOut, .accountRemoved])
        let (subscription, _, _, _) = await engine.subscribe(filter: filter, since: nil)
        defer { subscription.cancel() }
        // Subscribed first, then looked: a logout in between is seen one way or the other.
        let view = engine.view
        /// Why the share must end because of `id`'s state, if it must.
        @Sendable func ending(_ id: String) -> String? {
            guard let account = try? view.account(id) else { return "account \(id) was removed" }
            return account.state == .loggedOut ? "account \(id) was logged out" : nil
        }
        if let reason = share.accounts.sorted().lazy.compactMap(ending).first { return reason }
        return try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                // Only loggedOut and accountRemoved arrive: the first ends the share, even if
                // the account has been logged in again since.
                for try await event in subscription {
                    return ending(event.account) ?? "account \(event.account) was logged out"
                }
                throw CancellationError()
            }
            if let expiresAt = share.expiresAt {
                group.addTask { [clock = engine.clock] in
                    // The wall clock decides, looked at again after each wait: it may have been
                    // set while the share was open.
                    while clock.now < expiresAt {
                        try await clock.sleep(for: .seconds(max(0.01, expiresAt.timeIntervalSince(clock.now))))
                    }
                    return "its time ran out"
                }
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    /// `Join`: puts the calling connection under the share, if the caller opened it.
    private func join(_ request: JoinShareParameters, _ context: VarlinkCallContext) throws -> JoinShareReply {
        guard let share = shares.share(request.share, openedBy: context.peer.uid) else {
            throw VarlinkError(.shareEnded(share: request.share, reason: "no such share is open for this user"))
        }
        let consumer = ShareConsumer(share: share, consumerUID: request.consumerUid, consumerPID: request.consumerPid)
        guard context.scope.restrict(to: consumer) else {
            throw VarlinkError(.notShared(method: SharesContract.join.qualifiedName))
        }
        share.log("share joined", consumer.consumerMetadata, context.logger)
        return JoinShareReply(accounts: share.accounts.sorted())
    }
}
