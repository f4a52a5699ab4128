import Logging
import SesameCore
import SesameVarlink

/// Logs every event with structured fields (`SESAME_EVENT=`, `SESAME_ACCOUNT=`,
/// `SESAME_PROVIDER=`, and `PEER_UID=`/`PEER_PID=` when a caller's call caused it), at a level
/// that matches what it means for the person, and tells the status line it is stale.
enum EventLog {
    /// The peer whose call is being answered (set by `CallerAttributedInterface`), so the events
    /// that call causes are logged with its uid and pid; nil for what the daemon does by itself.
    @TaskLocal static var cause: PeerCredentials?

    /// The engine observer that logs each event and marks the status line stale.
    static func observer(logger: Logger, changes: AsyncStream<Void>.Continuation) -> @Sendable (AuthEvent) -> Void {
        { event in
            logger.log(
                level: level(of: event.kind),
                "\(event.kind.rawValue)",
                metadata: metadata(of: event, cause: cause)
            )
            changes.yield()
        }
    }

    /// The fields of an event's entry. Never the tokens: an event carries none, and its `reason`
    /// and `detail` are sesamed's own words, never token material or a provider's free text.
    static func metadata(of event: AuthEvent, cause: PeerCredentials?) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "event": "\(event.kind.rawValue)",
            "account": "\(event.account)",
            "provider": "\(event.provider)",
            "state": "\(event.state.rawValue)",
            "sequence": "\(event.sequence)",
        ]
        if let reason = event.reason { metadata["reason"] = "\(reason.rawValue)" }
        if let detail = event.detail { metadata["detail"] = "\(detail)" }
        if event.kind == .refreshTokenExpiring, let end = event.refreshTokenExpiresAt {
            metadata["refresh_token_expires_at"] = "\(end.formatted(.iso8601))"
        }
        if let cause {
            metadata["peer_uid"] = "\(cause.uid)"
            metadata["peer_pid"] = "\(cause.pid)"
        }
        return metadata
    }

    /// How much an event matters to whoever reads the log: a session that needs a person to log
    /// in again, or a refresh that failed, is a warning; an expired token a notice; the rest info.
    static func level(of kind: AuthEvent.Kind) -> Logger.Level {
        switch kind {
        case .needsLogin, .refreshFailed, .refreshTokenExpiring: .warning
        case .expired: .notice
        case .loggedIn, .tokenRefreshed, .expiring, .loggedOut, .accountRemoved: .info
        }
    }
}

/// An interface whose calls run with `EventLog.cause` set to the caller, so the events a call
/// causes (an import's `loggedIn`, a logout's `loggedOut`) are logged with the caller's uid.
struct CallerAttributedInterface: VarlinkInterface {
    /// The interface that answers the calls.
    let wrapped: any VarlinkInterface

    var name: String { wrapped.name }
    var interfaceDescription: String { wrapped.interfaceDescription }

    /// The wrapped interface's methods, each handler run with the caller recorded as the
    /// cause of what it does. What is answered on the loop only reads, so it causes no event to
    /// attribute, and wrapping must not move a call off the loop.
    var methods: VarlinkMethods {
        wrapped.methods.wrappingHandlers { context, handle in
            try await EventLog.$cause.withValue(context.peer) { try await handle(context) }
        }
    }
}
