import FoundationEssentials

/// What a caller asks of an access token beyond the account's own: fewer scopes than were
/// granted, or a token meant for one audience or resource. Such a token is obtained by OAuth 2.0
/// Token Exchange (RFC 8693) from the account's access token, never by a refresh: the refresh
/// token and the grant behind it stay as they are.
public struct TokenNarrowing: Sendable, Hashable, CustomStringConvertible {
    /// The scopes asked for, sorted and without repeats; empty means those granted.
    public let scopes: [String]
    /// The logical name of the service the token is for (RFC 8693 `audience`).
    public let audience: String?
    /// The absolute URI of the resource the token is for (RFC 8707 `resource`).
    public let resource: String?

    /// How many scopes one request may name, and how long a scope, audience or resource may be:
    /// bounds on what a caller makes sesamed keep and send.
    public static let scopeLimit = 32
    public static let lengthLimit = 2048

    /// Creates the narrowing, with the scopes in the one order every request for them shares.
    public init(scopes: [String] = [], audience: String? = nil, resource: String? = nil) {
        self.scopes = Set(scopes).sorted()
        self.audience = audience
        self.resource = resource
    }

    /// Whether nothing beyond the account's own token is asked for.
    public var isEmpty: Bool { scopes.isEmpty && audience == nil && resource == nil }

    /// What is asked for, in words; none of it is secret.
    public var description: String {
        var parts: [String] = []
        if !scopes.isEmpty { parts.append("scopes \(scopes.joined(separator: " "))") }
        if let audience { parts.append("audience \(audience)") }
        if let resource { parts.append("resource \(resource)") }
        return parts.isEmpty ? "the account's own token" : parts.joined(separator: ", ")
    }
}

/// Why no narrowed token could be had.
public enum NarrowingError: Error, Sendable, Hashable {
    /// The provider offers no way to narrow a token; `reason` says what is missing.
    case unsupported(reason: String)
    /// The provider refused this narrowing (`invalid_scope`, `invalid_target`): another may work.
    case refused(reason: String)
    /// The exchange failed in a way that may pass, or its answer was not acceptable.
    case failed(reason: String)
}
