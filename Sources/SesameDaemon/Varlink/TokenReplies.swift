import SesameCore
import SesameProtocol
import SesameVarlink
import Synchronization

/// The framed `GetToken` reply for each account's current tokens, so that handing the same
/// token out again costs no encoding: a program asks for its token before every request,
/// and encoding the reply was the largest part of a `GetToken` after the JSON decoding.
///
/// An entry is only handed out for a token equal to the one the engine gave for this call,
/// so a refresh or a new login is never answered with an old token; access is checked by the
/// caller on every call, before the entry is looked at. Logout and remove drop the account's
/// entry, so a revoked token is not kept here after the engine has wiped it.
final class TokenReplies: Sendable {
    /// What the reply says (not the whole token set: no refresh or ID token is kept here), and
    /// the reply framed.
    private struct Entry {
        var says: GetTokenReply
        var reply: VarlinkAnswer<GetTokenReply>
    }

    /// Beyond this many accounts the entries are dropped and built again as asked for; it
    /// bounds the memory whatever happens to accounts outside logout and remove.
    static let limit = 4096

    private let entries = Mutex<[String: Entry]>([:])

    /// The reply carrying `tokens` for `account`, framed.
    func reply(for account: String, tokens: TokenSet) throws -> VarlinkAnswer<GetTokenReply> {
        let says = GetTokenReply(
            accessToken: tokens.accessToken,
            tokenType: tokens.tokenType,
            expiresAt: tokens.accessTokenExpiresAt
        )
        if let entry = entries.withLock({ $0[account] }), entry.says == says {
            return entry.reply
        }
        let reply = try VarlinkAnswer.prepared(says)
        entries.withLock { entries in
            if entries.count >= Self.limit { entries.removeAll(keepingCapacity: true) }
            entries[account] = Entry(says: says, reply: reply)
        }
        return reply
    }

    /// Drops the account's entry (logout, remove).
    func forget(_ account: String) {
        _ = entries.withLock { $0.removeValue(forKey: account) }
    }

    /// How many accounts have an entry.
    var count: Int { entries.withLock { $0.count } }
}
