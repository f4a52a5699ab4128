import Testing

@testable import sesamectl_commands

/// sesamectl-commands is the credential helpers and sesame-notify too, chosen by the name it was started under:
/// the links' names, as git and docker run them (a bare name from PATH or a path), and nothing
/// that merely contains one.
struct ProgramNameTests {
    @Test(arguments: [
        ("git-credential-sesame", ProgramName.gitCredentialHelper),
        ("/usr/bin/git-credential-sesame", .gitCredentialHelper),
        ("docker-credential-sesame", .dockerCredentialHelper),
        ("/home/me/bin/docker-credential-sesame", .dockerCredentialHelper),
        ("/usr/bin/sesame-notify", .desktopNotifier),
        ("sesamectl", .sesamectl),
        ("/usr/bin/sesamectl", .sesamectl),
        ("/usr/libexec/sesame/sesamectl-commands", .sesamectl),
        ("git-credential-sesame-old", .sesamectl),
        ("", .sesamectl),
    ])
    func theNameStartedUnderChoosesTheProgram(_ argument: String, _ program: ProgramName) {
        #expect(ProgramName(argument: argument) == program)
    }
}
