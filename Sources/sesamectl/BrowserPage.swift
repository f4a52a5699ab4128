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
        let name = (account.displayName ?? account.subject).forDisplay(limit: 100)
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
    /// This text made safe to show a person: control characters (which could move a terminal's
    /// cursor or recolour it) left out, and cut to `limit` characters with an ellipsis.
    func forDisplay(limit: Int) -> String {
        let visible = String(
            String.UnicodeScalarView(unicodeScalars.filter { $0.properties.generalCategory != .control })
        )
        return visible.count <= limit ? visible : visible.prefix(limit) + "…"
    }
}
