import Foundation
import Testing

@testable import SesameCredentialHelper

/// The URL map every helper shares: the longest prefix wins, and only up to a boundary, so a
/// token never goes to a host its owner did not name.
struct CredentialHostsTests {
    private let hosts = CredentialHosts(hosts: [
        "https://github.com": "work",
        "https://github.com/private-org/": "org",
        "https://gitlab.example.com:8443": "lab",
    ])

    @Test(arguments: [
        ("https://github.com", "work"),
        ("https://github.com/someone/repo", "work"),
        ("https://github.com/private-org/repo", "org"),
        ("https://gitlab.example.com:8443/group/x", "lab"),
    ])
    func theLongestMatchingPrefixNamesTheAccount(_ url: String, _ account: String) throws {
        #expect(hosts.account(for: try #require(CredentialURL(url))) == account)
    }

    @Test(arguments: [
        "https://github.com.example.net", "https://github.community", "http://github.com",
        "https://gitlab.example.com:84430", "https://gitlab.example.com",
    ])
    func aLookalikeHostGetsNoAccount(_ url: String) throws {
        #expect(hosts.account(for: try #require(CredentialURL(url))) == nil)
    }

    @Test func withoutXDGConfigHomeTheFileIsUnderHomeAndWithoutHomeUnderThePasswordDatabasesHome() {
        #expect(CredentialHosts.path(environment: ["HOME": "/home/me"]) == "/home/me/.config/sesame/credentials.toml")
        let fromDatabase = CredentialHosts.accountHome() + "/.config/sesame/credentials.toml"
        #expect(CredentialHosts.path(environment: [:]) == fromDatabase)
        #expect(CredentialHosts.path(environment: ["HOME": "", "XDG_CONFIG_HOME": ""]) == fromDatabase)
        #expect(!CredentialHosts.accountHome().isEmpty, "this test's user has a home in the password database")
    }

    @Test func theFileIsReadFromTheXDGConfigHomeAndAMissingOneIsEmpty() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = CredentialHosts.path(environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(path == directory.path + "/sesame/credentials.toml")
        #expect(try CredentialHosts.load(from: path) == CredentialHosts())
        try FileManager.default.createDirectory(atPath: directory.path + "/sesame", withIntermediateDirectories: true)
        try Data("[hosts]\n\"https://a.example\" = \"a\"\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(
            try CredentialHosts.load(from: path).account(for: try #require(CredentialURL("https://a.example/x"))) == "a"
        )
        try Data("[hosts]\n\"https://a.example\" = 3\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: CredentialHelperError.self) { try CredentialHosts.load(from: path) }
    }
}
