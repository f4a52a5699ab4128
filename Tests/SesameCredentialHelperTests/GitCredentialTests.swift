import Testing

@testable import SesameCredentialHelper

/// git's credential description as the helper reads it (git-credential(1), "INPUT/OUTPUT
/// FORMAT"): `key=value` lines up to a blank line, `capability[]` repeated, bounded.
struct GitCredentialTests {
    @Test func attributesAndCapabilitiesAreReadUpToTheBlankLine() {
        let request = GitCredential(lines: [
            "protocol=https", "host=git.example.com", "path=team/repo.git", "capability[]=authtype",
            "capability[]=state", "wwwauth[]=Bearer realm=x", "", "username=after-the-blank-line",
        ])
        #expect(request.attributes["host"] == "git.example.com")
        #expect(request.capabilities == ["authtype", "state"])
        #expect(request.attributes["username"] == nil)
        #expect(request.url == "https://git.example.com/team/repo.git")
        #expect(request.serverURL?.description == "https://git.example.com/team/repo.git")
    }

    @Test func aValueKeepsEveryEqualsSignAfterTheFirst() {
        #expect(GitCredential(lines: ["password=a=b=="]).presentedToken == "a=b==")
        #expect(GitCredential(lines: ["credential=c", "password=p"]).presentedToken == "c")
    }

    @Test func aDecodedPathThatCouldBeReadTwoWaysHasNoServerURL() {
        #expect(GitCredential(lines: ["protocol=https", "host=h", "path=a?b"]).serverURL == nil)
        #expect(GitCredential(lines: ["protocol=https", "host=h@evil", "path=a"]).serverURL == nil)
    }

    @Test func readingStopsAtAnOverlongLineOrAfterAThousandLines() {
        let long = "host=" + String(repeating: "x", count: 65536)
        #expect(GitCredential(lines: ["protocol=https", long, "path=p"]).attributes == ["protocol": "https"])
        let many = (0..<1000).map { "k\($0)=v" } + ["host=late"]
        #expect(GitCredential(lines: many).attributes["host"] == nil)
    }
}
