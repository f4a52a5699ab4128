import FoundationEssentials
import SesameCore
import SesameProtocol
import SesameProviders
import SesameVarlink
import SesameWire

/// `ListProviders` and `RedeemCode`: what a client needs to know to log in with a provider, and
/// the code handover of logins an app or web page did.
extension AccountsInterface {
    /// Every configured provider and how its accounts log in; the names and flows are no secret
    /// to a local user, who may log in with any of them.
    func listProviders(_ caller: Caller) throws -> ListProvidersReply {
        let configured = providers.names.compactMap { try? providers.adapter($0) }
        let list = configured.map { (adapter: any ProviderAdapter) in
            Provider(
                name: adapter.name,
                type: adapter.configuration.kind.typeName,
                flows: adapter.loginFlows.map(\.wire),
                defaultFlow: adapter.loginFlows.contains(adapter.defaultFlow) ? adapter.defaultFlow.wire : nil,
                redirectURI: adapter.configuration.redirectURI,
                loginUnavailable: adapter.loginFlows.isEmpty ? adapter.loginUnavailable : nil,
                notices: adapter.configuration.notices.isEmpty ? nil : adapter.configuration.notices
            )
        }
        let broken = providers.broken.map { file in
            Provider(
                name: file.name,
                type: "",
                flows: [],
                defaultFlow: nil,
                redirectURI: nil,
                loginUnavailable: Self.brokenFileSentence(file, shownWhy: caller.mayMendProviders)
            )
        }
        return ListProvidersReply(
            providers: (list + broken).sorted { $0.name < $1.name },
            directory: providers.directory
        )
    }

    /// Why a broken provider cannot log in, and what to do. Only who may mend the file is shown
    /// what is wrong in it: a parser's message may quote it, and the file may hold a secret.
    private static func brokenFileSentence(_ file: ProviderFiles.Broken, shownWhy: Bool) -> String {
        let what = shownWhy ? "\(file.error)" : "its provider file is broken (root sees why in `sesamectl providers`)"
        return "\(what); fix the file and reload sesamed (systemctl reload sesamed)"
    }

    /// Redeems a handed-over authorization code into an account owned by the caller. It counts
    /// against the caller's logins like `Login`, since it makes the provider work the same way.
    func redeemCode(_ request: RedeemCodeParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> LoggedInReply
    {
        let adapter = try providers.adapter(request.provider)
        guard !request.code.isEmpty, request.code.utf8.count <= 4096 else {
            throw VarlinkError.invalidParameter("code")
        }
        guard (request.user?.utf8.count ?? 0) <= 4096 else { throw VarlinkError.invalidParameter("user") }
        let uid = caller.peer.uid
        // A code whose redirect carried a state sesamed issued to someone else was meant for
        // their login (it reached this caller by listening where it should not).
        if let state = request.state, await pendingLogins.isAnotherUsersState(state, caller: uid) {
            throw VarlinkLoginError.unknownLogin
        }
        try spendProviderCall(caller)
        if let refusal = await pendingLogins.reserveLogin(owner: uid, in: trust) { throw refusal }
        defer { trust.release(.login, for: uid) }
        var login: ProviderLogin
        do {
            login = try await adapter.redeemCode(
                HandedOverCode(
                    code: request.code,
                    redirectURI: request.redirectUri,
                    codeVerifier: request.codeVerifier,
                    state: request.state,
                    user: request.user
                )
            )
        } catch {
            Self.log(error, ofLoginWith: request.provider, context: context)
            throw VarlinkLoginError.provider(error)
        }
        if let name = request.displayName { login.displayName = ProviderText.displayName(name) }
        return try await store(login, provider: request.provider, adapter: adapter, owner: uid, context)
    }

    /// The flow a `Login` asked for (or the provider's own), if the provider offers it.
    static func flow(_ requested: LoginFlow?, of adapter: any ProviderAdapter) throws -> ProviderConfiguration.Flow {
        let flow = requested.map(ProviderConfiguration.Flow.init) ?? adapter.defaultFlow
        guard adapter.loginFlows.contains(flow) else {
            let offered = adapter.loginFlows.map(\.wire.rawValue).joined(separator: " or ")
            let reason = adapter.loginUnavailable ?? "\(adapter.name) offers the \(offered) flow only"
            throw VarlinkLoginError.unsupported(provider: adapter.name, reason: reason)
        }
        return flow
    }
}

extension ProviderConfiguration.Flow {
    /// The flow as `io.sesame.Accounts` names it.
    var wire: LoginFlow {
        switch self {
        case .device: .device
        case .authorizationCode: .authorizationCode
        }
    }

    /// The flow a caller named.
    init(_ wire: LoginFlow) {
        switch wire {
        case .device: self = .device
        case .authorizationCode: self = .authorizationCode
        }
    }
}
