/// A page the browser is shown when it comes back to sesamectl: a heading and a few lines, on one
/// self-contained document that loads nothing (its policy forbids it).
struct BrowserPage: Sendable, Equatable {
    /// What a page reports; it sets the page's colour and mark.
    enum Kind: String, Sendable {
        /// The login is done.
        case done
        /// What the browser brought finished nothing; no account was added.
        case failed
        /// Neither: the page explains, and the login goes on.
        case notice
    }

    /// One line of a page, as plain text: rendering escapes it.
    enum Line: Sendable, Equatable {
        /// A paragraph.
        case text(String)
        /// A labelled value, such as the provider or the account; consecutive ones form a list.
        case fact(String, String)
        /// A command to type in the terminal, shown in a box of its own.
        case command(String)
    }

    /// What the page reports.
    var kind: Kind
    /// The page's heading and title, e.g. "Logged in".
    var heading: String
    /// What the page says under the heading.
    var lines: [Line]

    /// The Content-Security-Policy of every page, sent as a header and repeated in the page: the
    /// page's own inline style and nothing else, so that even text escaped wrongly could load
    /// nothing and send nothing anywhere.
    static let policy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

    /// The page as an HTML document. Every line is escaped: what it quotes (a provider's error,
    /// an error message) is shown as text, never run as markup.
    var html: String {
        let heading = Self.escaped(heading)
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta http-equiv="Content-Security-Policy" content="\(Self.policy)">
            <meta name="referrer" content="no-referrer">
            <title>\(heading) · Sesame</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            <main class="\(kind.rawValue)">
            <header><span class="mark" aria-hidden="true"></span>Sesame</header>
            <h1>\(heading)</h1>
            \(Self.body(lines))
            </main>
            </body>
            </html>

            """
    }

    /// `lines` as HTML, each escaped; consecutive facts become one definition list.
    static func body(_ lines: [Line]) -> String {
        var html: [String] = []
        var facts: [String] = []
        for line in lines {
            if case .fact(let label, let value) = line {
                facts.append("<dt>\(escaped(label))</dt><dd>\(escaped(value))</dd>")
                continue
            }
            if !facts.isEmpty {
                html.append("<dl>\(facts.joined())</dl>")
                facts = []
            }
            switch line {
            case .text(let text): html.append("<p>\(escaped(text))</p>")
            case .command(let command): html.append("<pre><code>\(escaped(command))</code></pre>")
            case .fact: break
            }
        }
        if !facts.isEmpty { html.append("<dl>\(facts.joined())</dl>") }
        return html.joined(separator: "\n")
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

    /// The pages' one stylesheet: the system's fonts, a centred card that fits a phone's width,
    /// and colours for light and dark screens. It names no font file or image: the policy
    /// would refuse to load them.
    static let style = """
        :root{color-scheme:light dark;--bg:#f2f4f7;--card:#fff;--text:#1f2328;--muted:#59636e;\
        --line:#d8dee4;--code:#f6f8fa;--done:#1a7f37;--failed:#cf222e;--notice:#0969da}
        @media (prefers-color-scheme:dark){:root{--bg:#0d1117;--card:#161b22;--text:#e6edf3;\
        --muted:#9198a1;--line:#30363d;--code:#0d1117;--done:#3fb950;--failed:#f85149;--notice:#4493f8}}
        *{box-sizing:border-box}
        html{background:var(--bg);color:var(--text);font:16px/1.5 system-ui,-apple-system,"Segoe UI",\
        Roboto,Ubuntu,Cantarell,"Noto Sans","DejaVu Sans","Helvetica Neue",Arial,sans-serif}
        body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:24px}
        main{width:100%;max-width:30rem;background:var(--card);border:1px solid var(--line);\
        border-top:4px solid var(--accent);border-radius:12px;padding:24px 28px;\
        box-shadow:0 1px 3px rgb(0 0 0/.08)}
        .done{--accent:var(--done)}.failed{--accent:var(--failed)}.notice{--accent:var(--notice)}
        header{display:flex;align-items:center;gap:10px;color:var(--muted);font-size:.875rem;\
        font-weight:600;letter-spacing:.04em}
        .mark{width:28px;height:28px;border-radius:50%;background:var(--accent);color:var(--card);\
        display:flex;align-items:center;justify-content:center;font-weight:700;font-size:18px}
        .done .mark::after{content:"";width:7px;height:13px;border:solid var(--card);\
        border-width:0 3px 3px 0;transform:translateY(-1px) rotate(45deg)}
        .failed .mark::after{content:"!"}.notice .mark::after{content:"i"}
        h1{font-size:1.5rem;line-height:1.25;margin:16px 0 8px}
        p{margin:8px 0}
        dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:16px 0;padding:12px 16px;\
        border:1px solid var(--line);border-radius:8px}
        dt{color:var(--muted)}dd{margin:0;font-weight:600;overflow-wrap:anywhere}
        pre{margin:8px 0;padding:8px 12px;background:var(--code);border:1px solid var(--line);border-radius:6px;\
        white-space:pre-wrap;overflow-wrap:anywhere}
        code{font:.875rem/1.4 ui-monospace,"SF Mono","DejaVu Sans Mono",Menlo,Consolas,monospace}
        @media (max-width:480px){body{padding:12px;align-items:flex-start}main{padding:20px}\
        dl{grid-template-columns:1fr;gap:0}dd+dt{margin-top:8px}}
        """
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
