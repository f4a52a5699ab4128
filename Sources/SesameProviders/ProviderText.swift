import Foundation

/// Text that came from a provider (error codes, error descriptions, issuer names, header
/// values), made fit for logs, events, replies and error messages. Some providers echo what a
/// request carried (`"error_description": "<refresh token> unknown"`), and any of them may send
/// control characters or megabytes; so every secret the request carried is cut out, control and
/// formatting characters are escaped, and the length is capped.
public enum ProviderText {
    /// What stands in for a secret the provider echoed.
    public static let redaction = "[redacted]"

    /// `text` with each of `secrets` (and their form-encoded spellings) replaced by `redaction`,
    /// control and bidirectional-formatting characters escaped as `\u{…}`, and at most `limit`
    /// characters kept (an ellipsis marks the cut).
    public static func sanitized(_ text: String, redacting secrets: [String] = [], limit: Int = 200) -> String {
        var text = text
        // Longest first, so a secret that contains another is cut out whole. Literally, scalar
        // by scalar: a combining mark after a secret must not hide it from the comparison.
        for secret in spellings(of: secrets) {
            text = text.replacingOccurrences(of: secret, with: redaction, options: .literal)
        }
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else {
                result += "…"
                break
            }
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned,
                .nonspacingMark, .enclosingMark:
                result += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                result.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return result
    }

    /// A name to show people, as a provider or a caller gave it: canonically composed, no
    /// control characters, at most 200 scalars and an ellipsis (at most 2,000 bytes with escapes).
    public static func displayName(_ name: String) -> String {
        sanitized(name.precomposedStringWithCanonicalMapping, limit: 200)
    }

    /// An OAuth error code as RFC 6749 §5.2 defines it (`%x20-21 / %x23-5B / %x5D-7E`), or a
    /// placeholder when the provider sent something else; short either way.
    public static func errorCode(_ code: String, redacting secrets: [String] = []) -> String {
        let allowed = code.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\" }
        guard allowed, !code.isEmpty else { return "(an error code outside RFC 6749 §5.2)" }
        return sanitized(code, redacting: secrets, limit: 64)
    }

    /// Each secret as it might appear in an echo: as sent, and percent-encoded as a form or URL
    /// carries it. Secrets shorter than 4 characters are not worth cutting out of text.
    private static func spellings(of secrets: [String]) -> [String] {
        var all = Set<String>()
        for secret in secrets where secret.count >= 4 {
            all.insert(secret)
            all.insert(OAuthHTTP.formEncode(secret))
        }
        return all.sorted { $0.count > $1.count }
    }
}
