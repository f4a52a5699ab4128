import FoundationEssentials
import SesameCore
import SesameProtocol

/// An adapter whose provider does most things by the standards: what it does not override is
/// done by the generic OpenID Connect provider it wraps, and a flow its provider lacks is
/// refused before anything is sent.
protocol OIDCBasedAdapter: ProviderAdapter {
    /// The generic provider, configured with this provider's credentials and profile lookup.
    var base: GenericOIDCProvider { get }
}

extension OIDCBasedAdapter {
    public var configuration: ProviderConfiguration { base.configuration }

    public func startDeviceLogin(scopes: [String]?) async throws(ProviderError) -> DeviceAuthorization {
        try refuseUnless(.device)
        return try await base.startDeviceLogin(scopes: scopes)
    }

    public func finishDeviceLogin(_ authorization: DeviceAuthorization, polling: DevicePolling)
        async throws(ProviderError) -> ProviderLogin
    {
        try refuseUnless(.device)
        return try await base.finishDeviceLogin(authorization, polling: polling)
    }

    public func startAuthorizationCodeLogin(redirectURI: String, scopes: [String]?) async throws(ProviderError)
        -> AuthorizationRequest
    {
        try refuseUnless(.authorizationCode)
        return try await base.startAuthorizationCodeLogin(redirectURI: redirectURI, scopes: scopes)
    }

    public func finishAuthorizationCodeLogin(_ request: AuthorizationRequest, code: String) async throws(ProviderError)
        -> ProviderLogin
    {
        try refuseUnless(.authorizationCode)
        return try await base.finishAuthorizationCodeLogin(request, code: code)
    }

    public func redeemCode(_ handover: HandedOverCode) async throws(ProviderError) -> ProviderLogin {
        try await base.redeemCode(handover)
    }

    public func refresh(_ account: Account, tokens: TokenSet) async throws(RefreshError) -> TokenSet {
        try await base.refresh(account, tokens: tokens)
    }

    public func verifyHandedOver(_ tokens: TokenSet, subject: String) async throws(ProviderError) {
        try await base.verifyHandedOver(tokens, subject: subject)
    }

    public func revoke(_ tokens: TokenSet) async throws(ProviderError) {
        try await base.revoke(tokens)
    }

    public func checkAccessToken(_ tokens: TokenSet, subject: String) async throws(ProviderError) -> AccessTokenCheck {
        try await base.checkAccessToken(tokens, subject: subject)
    }

    public func checkConfiguration(pay: @escaping DevicePolling.Payment) async -> [ProviderCheck] {
        await base.checkConfiguration(pay: pay)
    }

    private func refuseUnless(_ flow: ProviderConfiguration.Flow) throws(ProviderError) {
        guard loginFlows.contains(flow) else {
            let offered = loginFlows.map(\.rawValue).joined(separator: " or ")
            throw .unsupported(loginUnavailable ?? "the \(flow.rawValue) flow; \(name) offers \(offered) only")
        }
    }
}
