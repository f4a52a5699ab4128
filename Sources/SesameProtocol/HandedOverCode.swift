import FoundationEssentials

/// An authorization code a person's app or web page obtained and hands over, with what it was
/// bound to at the provider.
public struct HandedOverCode: Sendable, Hashable, CustomStringConvertible {
    /// The single-use code.
    public var code: String
    /// The redirect URI of the authorization request, when it named one (RFC 6749 §4.1.3).
    public var redirectURI: String?
    /// The PKCE verifier, when the app used PKCE (RFC 7636 §4.5).
    public var codeVerifier: String?
    /// The state of the authorization request, for providers that want it again at the token
    /// endpoint (Naver).
    public var state: String?
    /// Apple's `user` form field as posted with the code: JSON with the person's name and email,
    /// sent on the first authorization only.
    public var user: String?

    /// Creates a handover.
    public init(
        code: String,
        redirectURI: String? = nil,
        codeVerifier: String? = nil,
        state: String? = nil,
        user: String? = nil
    ) {
        self.code = code
        self.redirectURI = redirectURI
        self.codeVerifier = codeVerifier
        self.state = state
        self.user = user
    }

    /// Never the code, the verifier or the person's name.
    public var description: String { "HandedOverCode(redirectURI: \(redirectURI ?? "-"))" }
}
