import SesameCore

/// The pages the browser is shown when it comes back to sesamectl: one paragraph of text.
enum BrowserPage {
    /// A page that says `text`, escaped: whatever it quotes (a provider's error, an error
    /// message) is shown as text, never run as markup.
    static func html(_ text: String) -> String {
        "<!doctype html><meta charset=utf-8><title>Sesame</title><p>\(escaped(text))</p>\n"
    }

    /// The page of a login that ended with `account` logged in.
    static func loggedIn(_ account: Account) -> String {
        let name = Formatting.name(of: account)
        return html(
            "You are logged in as \(name) (account \(account.id)). You may close this tab and return to the terminal."
        )
    }

    /// The page of a login that failed because `reason`.
    static func failed(_ reason: String) -> String {
        html("The login failed: \(reason.forDisplay(limit: 300)). You may close this tab and return to the terminal.")
    }

    /// `text` with the characters that mean something in HTML written as references.
    static func escaped(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

extension String {
    /// This text made safe to show a person, cut to `limit` characters with an ellipsis. Control
    /// characters (which could move a terminal's cursor or recolour it), formatting characters
    /// (a right-to-left override such as U+202E makes "moc.elgoog" read "google.com", and the
    /// rest of a table line with it) and line or paragraph separators are shown escaped, as
    /// `\u{202e}`: a name that carries them says so instead of passing for another.
    func forDisplay(limit: Int) -> String {
        var shown = ""
        for scalar in unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator:
                shown += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown.count <= limit ? shown : shown.prefix(limit) + "…"
    }
}
