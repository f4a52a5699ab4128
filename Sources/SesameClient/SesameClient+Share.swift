import FoundationEssentials
import SesameProtocol

/// What a share's `Open` call says: that it is open, then, last, why it ended.
public enum ShareUpdate: Sendable, Hashable {
    /// The share is open as described.
    case opened(ShareInfo)
    /// The share has ended, and why (an account logged out, its time ran out).
    case ended(reason: String)

    /// Reads a reply; nil for a kind of reply this version does not know.
    init?(_ reply: OpenShareReply) {
        if let share = reply.share {
            self = .opened(share)
        } else if let reason = reply.ended {
            self = .ended(reason: reason)
        } else {
            return nil
        }
    }
}

extension SesameClient {
    /// Opens a share of `accounts` (see `io.sesame.Shares`): the stream yields `.opened` with the
    /// share's id, for the relay's connections to `joinShare`, and `.ended` when it ends. The
    /// share lasts while the stream is read; ending it (or closing the client) ends the share.
    public func share(
        _ accounts: [String],
        expiresIn seconds: Int? = nil,
        idToken: Bool = false,
        socket: String? = nil
    ) async throws -> AsyncThrowingStream<ShareUpdate, any Error> {
        let parameters = OpenShareParameters(accounts: accounts, expiresIn: seconds, idToken: idToken, socket: socket)
        let replies = try await connection.stream(SharesContract.open, parameters)
        return relay(replies) { ShareUpdate(try SharesContract.open.reply(from: $0)) }
    }
}
