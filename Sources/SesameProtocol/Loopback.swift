/// The loopback interface, as every part of Sesame names it: by IP literal only. `localhost`
/// is a name the resolver may send elsewhere, and a browser may try it on ::1 where another
/// local user listens (RFC 8252 §8.3).
public enum Loopback {
    /// Whether `host` (as in a URL, IPv6 with or without brackets) is a loopback literal.
    public static func isLiteral(_ host: String) -> Bool {
        host == "127.0.0.1" || host == "::1" || host == "[::1]"
    }
}
