/// A credential description as git's credential-helper protocol writes it (git-credential(1),
/// "INPUT/OUTPUT FORMAT"): `key=value` lines up to a blank line or the end of input; keys
/// ending in `[]` may repeat.
struct GitCredential {
    /// The single-valued attributes (`protocol`, `host`, `path`, `username`, `password`, ...).
    var attributes: [String: String] = [:]
    /// What git says it can take beyond username and password (`capability[]`), e.g. `authtype`.
    var capabilities: Set<String> = []

    /// Reads a description from `lines`; git bounds its own lines (at most 64 KiB each), and so
    /// does this: a line longer than that, or more than 1,000 of them, ends the reading.
    init(lines: some Sequence<String>) {
        for (index, line) in lines.enumerated() {
            guard !line.isEmpty, index < 1000, line.utf8.count <= 65536 else { break }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            if key == "capability[]" {
                capabilities.insert(value)
            } else {
                attributes[key] = value
            }
        }
    }

    /// The URL git is asking about: `protocol://host[/path]` (`path` only when git sends it,
    /// with `credential.useHttpPath`).
    var url: String {
        let scheme = attributes["protocol"] ?? "https"
        let path = attributes["path"].map { "/" + $0 } ?? ""
        return "\(scheme)://\(attributes["host"] ?? "")\(path)"
    }

    /// The URL as the map and the http guard judge it, from the attributes git decoded.
    var serverURL: CredentialURL? {
        CredentialURL(
            scheme: attributes["protocol"] ?? "https",
            host: attributes["host"] ?? "",
            decodedPath: attributes["path"]
        )
    }

    /// The token git presents in `erase`: the one the server refused.
    var presentedToken: String? {
        attributes["credential"] ?? attributes["password"]
    }
}
