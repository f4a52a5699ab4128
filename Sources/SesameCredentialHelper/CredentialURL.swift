/// A server URL a credential helper is asked about, in the one form it is judged and compared
/// with the map in: scheme and host in lower case, the path percent-decoded with its dot
/// segments removed (RFC 3986 §6.2.2, §5.2.4), no query or fragment. A server may read `..` or
/// an encoded `/` its own way, so a path that hides one in percent-encoding is refused rather
/// than guessed at: it could reach a repository other than the one the map names.
public struct CredentialURL: Sendable, Equatable, CustomStringConvertible {
    /// `https`, `http`, …, in lower case.
    public let scheme: String
    /// The host and any port, in lower case, without user information.
    public let host: String
    /// The path's segments, decoded, dot segments removed.
    public let segments: [String]

    /// Reads `url`; nil when it has no `scheme://`, or its path has a bad or ambiguous escape.
    public init?(_ url: String) {
        guard let separator = url.firstRange(of: "://") else { return nil }
        scheme = url[..<separator.lowerBound].lowercased()
        let rest = url[separator.upperBound...]
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        host = String(authority.split(separator: "@", omittingEmptySubsequences: false).last ?? "").lowercased()
        let pathEnd = rest[authorityEnd...].firstIndex { "?#".contains($0) } ?? rest.endIndex
        guard !scheme.isEmpty, !host.isEmpty,
            let segments = Self.segments(of: rest[authorityEnd..<pathEnd])
        else { return nil }
        self.segments = segments
    }

    /// A URL from parts already percent-decoded, as git's credential attributes are (git
    /// decodes the URL before it asks a helper), so nothing is decoded again. Nil when a part
    /// holds what could be read two ways: `?`, `#`, `%` or `\` in the path (a decoded `?` would
    /// end the path here, not at the server), or `@`, `/`, `?`, `#` in the host.
    public init?(scheme: String, host: String, decodedPath: String?) {
        let path = decodedPath ?? ""
        guard !scheme.isEmpty, !host.isEmpty, !host.contains(where: { "@/?#\\".contains($0) }),
            !path.contains(where: { "?#%\\".contains($0) })
        else { return nil }
        self.scheme = scheme.lowercased()
        self.host = host.lowercased()
        var segments: [String] = []
        for segment in path.split(separator: "/") where segment != "." {
            if segment == ".." { _ = segments.popLast() } else { segments.append(String(segment)) }
        }
        self.segments = segments
    }

    /// The URL as compared: `scheme://host/seg/ments`.
    public var description: String {
        "\(scheme)://\(host)" + segments.map { "/" + $0 }.joined()
    }

    /// Whether `other` is this URL or below it: the same scheme and host, and this path's
    /// segments first in its path (so `/team` covers `/team/x`, never `/teammate`).
    public func covers(_ other: CredentialURL) -> Bool {
        scheme == other.scheme && host == other.host && other.segments.starts(with: segments)
    }

    /// Why no token may go to this server, or nil when one may: https, or plain http to this
    /// machine only, where nobody on the way could read it.
    public var refusal: CredentialHelperError? {
        switch scheme {
        case "https": nil
        case "http": isThisMachine ? nil : .plainHTTP(url: description)
        default: .unsupportedScheme(url: description)
        }
    }

    /// Whether the host is this machine: `localhost`, `[::1]` or a literal 127.0.0.0/8
    /// address in dotted decimal without leading zeros (which resolvers may read as octal or
    /// as a name), never a name that merely starts like one (`127.evil.example`).
    public var isThisMachine: Bool {
        if host.hasPrefix("[") { return host.prefix { $0 != "]" }.dropFirst() == "::1" }
        let name = host.prefix { $0 != ":" }
        if name == "localhost" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.first == "127"
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCIIDigit)
                    && (part == "0" || part.first != "0")
                    && Int(part).map { $0 <= 255 } == true
            }
    }

    /// The decoded segments of `path` with dot segments removed; nil for a bad escape, an
    /// encoded `/` or `\`, or a dot segment spelled with escapes.
    private static func segments(of path: Substring) -> [String]? {
        var result: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = decoded(raw) else { return nil }
            let isDotSegment = segment == "." || segment == ".."
            if isDotSegment && raw.utf8.contains(UInt8(ascii: "%")) { return nil }
            switch segment {
            case ".": continue
            case "..": _ = result.popLast()
            default: result.append(segment)
            }
        }
        return result
    }

    /// `raw` with its `%XX` escapes decoded; nil for a bad escape, or one of `/` or `\`.
    private static func decoded(_ raw: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = raw.utf8[...]
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16),
                value != UInt8(ascii: "/"), value != UInt8(ascii: "\\")
            else { return nil }
            bytes.append(value)
            utf8 = utf8.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
