import FoundationEssentials
import SesameProtocol
import SesameProviders
import SesameVarlink
import SesameWire

/// Authorization-code logins between `Login` and `CompleteLogin`, keyed by their single-use
/// `state`. Each belongs to the uid that started it, keeps the adapter it started with (a
/// reload may replace the provider meanwhile), and lapses after `lifetime`, or at once when
/// the connection it was started on closes (its caller gave up, or was stopped): a login that
/// can no longer finish holds none of its owner's login allowance.
actor PendingLogins {
    struct Entry {
        var provider: String
        var adapter: any ProviderAdapter
        var owner: UInt32
        var request: AuthorizationRequest
        var expires: ContinuousClock.Instant
    }

    static let lifetime = AccountsContract.authorizationCodeLoginLifetime
    private var entries: [String: Entry] = [:]
    /// Who each state was issued to, kept for its lifetime even after CompleteLogin took it: a
    /// redirect that reached another local user's listener must not let them redeem the code.
    private var issued: [String: (owner: UInt32, expires: ContinuousClock.Instant)] = [:]

    /// Keeps `request` until CompleteLogin or its lifetime ends.
    func add(_ request: AuthorizationRequest, provider: String, adapter: any ProviderAdapter, owner: UInt32) {
        let now = ContinuousClock.now
        entries = entries.filter { $0.value.expires > now }
        issued = issued.filter { $0.value.expires > now }
        issued[request.state] = (owner, now + Self.lifetime)
        entries[request.state] = Entry(
            provider: provider,
            adapter: adapter,
            owner: owner,
            request: request,
            expires: now + Self.lifetime
        )
    }

    /// Takes one login allowance of `owner` from `trust`, counting the logins that wait here,
    /// in one step so that concurrent logins cannot both slip under the limit.
    func reserveLogin(owner: UInt32, in trust: Trust) -> VarlinkError? {
        trust.acquire(.login, for: owner, besides: count(owner: owner))
    }

    /// How many logins of `owner` wait for CompleteLogin.
    func count(owner: UInt32) -> Int {
        let now = ContinuousClock.now
        return entries.values.count { $0.owner == owner && $0.expires > now }
    }

    /// Whether `state` was issued for a login of another uid than `caller`.
    func isAnotherUsersState(_ state: String, caller: UInt32) -> Bool {
        guard let record = issued[state], record.expires > .now else { return false }
        return record.owner != caller
    }

    /// Ends the login with this state, if it still waits: its caller is gone.
    func cancel(state: String) {
        entries[state] = nil
    }

    /// Removes and returns the login with this state; a second use, another uid's state, or an
    /// expired one finds nothing.
    func take(state: String, owner: UInt32) -> Entry? {
        guard let entry = entries[state], entry.owner == owner else { return nil }
        entries[state] = nil
        return entry.expires > .now ? entry : nil
    }
}
