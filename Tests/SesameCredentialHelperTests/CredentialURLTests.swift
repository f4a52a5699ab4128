import Testing

@testable import SesameCredentialHelper

/// Which servers a helper may send a token to, and how a URL is compared with the map: only
/// https, or http to this machine by a literal loopback address or `localhost`; paths compared
/// decoded and without dot segments, and a path that hides `/` or `..` in escapes refused.
struct CredentialURLTests {
    @Test(arguments: [
        "https://git.example.com/x", "HTTPS://Git.Example.COM", "http://localhost:8080/r", "http://127.0.0.1/r",
        "http://127.1.2.3:99", "http://[::1]:3000/r",
    ])
    func httpsAndThisMachinesHTTPMayGetAToken(_ url: String) throws {
        #expect(try #require(CredentialURL(url)).refusal == nil)
    }

    @Test(arguments: [
        ("http://git.example.com", "plain"), ("HTTP://git.example.com", "plain"),
        ("http://127.evil.example/r", "plain"), ("http://127.0.0.1.evil.example", "plain"),
        ("http://127.0.0.256", "plain"), ("http://127.08.0.1", "plain"), ("http://0127.0.0.1", "plain"),
        ("http://localhost.evil.example", "plain"),
        ("ftp://git.example.com", "scheme"), ("ssh://localhost", "scheme"),
    ])
    func anythingElseGetsNone(_ url: String, _ why: String) throws {
        let refusal = try #require(CredentialURL(url)?.refusal)
        switch refusal {
        case .plainHTTP: #expect(why == "plain")
        case .unsupportedScheme: #expect(why == "scheme")
        default: Issue.record("\(url): \(refusal)")
        }
    }

    @Test func pathsAreComparedDecodedAndWithoutDotSegments() throws {
        let hosts = CredentialHosts(hosts: ["https://host.example/team": "team"])
        func account(_ url: String) throws -> String? { hosts.account(for: try #require(CredentialURL(url))) }
        #expect(try account("https://host.example/team/repo.git") == "team")
        #expect(try account("https://host.example/t%65am/repo.git") == "team")
        #expect(try account("https://host.example/team/../other/repo.git") == nil)
        #expect(try account("https://host.example/team/./repo.git") == "team")
        #expect(try account("https://host.example/teammate") == nil)
        #expect(try account("https://user@HOST.example/team?x#y") == "team")
    }

    @Test(arguments: [
        "https://host.example/team%2F..%2Fother", "https://host.example/team/%2e%2e/other",
        "https://host.example/team%5c..", "https://host.example/bad%zz", "https://host.example/cut%2", "no-scheme",
    ])
    func aPathThatHidesASlashOrADotSegmentIsRefused(_ url: String) {
        #expect(CredentialURL(url) == nil)
        #expect(throws: CredentialHelperError.ambiguousURL(url: url)) { try CredentialURL.checked(url) }
    }

    /// git decodes the URL before it asks a helper: its parts are not decoded again, and a part
    /// that a decoded `?`, `#` or `%` would make mean something else is refused.
    @Test func gitsDecodedPartsAreTakenAsTheyAre() throws {
        let hosts = CredentialHosts(hosts: ["https://host.example/team": "team"])
        func account(_ path: String) -> String? {
            CredentialURL(scheme: "HTTPS", host: "Host.example", decodedPath: path).flatMap(hosts.account(for:))
        }
        #expect(account("team/repo.git") == "team")
        #expect(account("team/./repo.git") == "team")
        #expect(account("team/../other/repo.git") == nil)
        for path in ["team?/../other", "team#/../other", "te%61m/repo.git", "team\\..\\x"] {
            #expect(CredentialURL(scheme: "https", host: "host.example", decodedPath: path) == nil, "\(path)")
        }
        #expect(CredentialURL(scheme: "https", host: "evil@host.example", decodedPath: nil) == nil)
    }
}
