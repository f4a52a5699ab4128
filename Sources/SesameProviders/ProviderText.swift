import FoundationEssentials

/// Text that came from a provider (error codes, error descriptions, issuer names, header
/// values), made fit for logs, events, replies and error messages. Some providers echo what a
/// request carried (`"error_description": "<refresh token> unknown"`), and any of them may send
/// control characters or megabytes; so every secret the request carried is cut out, control and
/// formatting characters are escaped, and the length is capped.
public enum ProviderText {
    /// What stands in for a secret the provider echoed.
    public static let redaction = "[redacted]"

    /// How many leading characters of a secret make an echo of it: a provider that shows a token
    /// cut short (`"rt_8f2a91c0… unknown"`) still shows enough of it to matter.
    public static let echoLength = 8

    /// `text` with each echo of `secrets` (and of their form-encoded spellings) replaced by
    /// `redaction`, control and bidirectional-formatting characters escaped as `\u{…}`, and at
    /// most `limit` characters kept (an ellipsis marks the cut). An echo is a secret as sent, in
    /// any letter case, or any run of at least `echoLength` of its first characters.
    public static func sanitized(_ text: String, redacting secrets: [String] = [], limit: Int = 200) -> String {
        let spelled = spellings(of: secrets).map { Array($0.unicodeScalars) }
        // What lies past the limit is never shown; what a secret before it spans must be seen
        // whole. Cutting first keeps the comparison's cost bounded whatever the provider sends.
        let longest = spelled.map(\.count).max() ?? 0
        var scalars = Array(text.unicodeScalars.prefix(limit + 2 * longest + 1))
        let cut = scalars.count > limit + 2 * longest
        // Longest first, so a secret that contains another is cut out whole. Scalar by scalar: a
        // combining mark after a secret must not hide it from the comparison.
        for secret in spelled {
            scalars = redacting(secret, in: scalars)
        }
        var result = ""
        var count = 0
        for scalar in scalars {
            guard count < limit else {
                result += "…"
                return result
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
        return cut ? result + "…" : result
    }

    /// `text` with every echo of `secret` (see `sanitized`) replaced by `redaction`.
    private static func redacting(_ secret: [Unicode.Scalar], in text: [Unicode.Scalar]) -> [Unicode.Scalar] {
        let shortest = min(secret.count, echoLength)
        var result: [Unicode.Scalar] = []
        var index = 0
        while index < text.count {
            var matched = 0
            while matched < secret.count, index + matched < text.count,
                folded(text[index + matched]) == folded(secret[matched])
            {
                matched += 1
            }
            if matched >= shortest {
                result += redaction.unicodeScalars
                index += matched
            } else {
                result.append(text[index])
                index += 1
            }
        }
        return result
    }

    /// An ASCII letter in lower case, anything else as it is: tokens are ASCII, and an echo may
    /// have been case-folded on the way (`rt_ABC` logged as `rt_abc`).
    private static func folded(_ scalar: Unicode.Scalar) -> UInt32 {
        ("A"..."Z").contains(scalar) ? scalar.value + 32 : scalar.value
    }

    /// A name to show people, as a provider or a caller gave it: canonically composed, no
    /// control characters, at most 200 scalars and an ellipsis (at most 2,000 bytes with escapes).
    public static func displayName(_ name: String) -> String {
        // NFC by the standard library's own normalizer (the one String comparison uses, and
        // Foundation's `precomposedStringWithCanonicalMapping` too): Foundation's version would
        // link ICU and its 34 MB of data into sesamed for this one call.
        sanitized(String(decoding: name._nfcCodeUnits, as: UTF8.self), limit: 200)
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
