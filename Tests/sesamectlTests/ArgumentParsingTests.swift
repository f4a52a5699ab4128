import ArgumentParser
import SesameCore
import SesameProtocol
import SesameWire
import SesamectlShortcut
import Testing

@testable import sesamectl_commands

/// sesamectl's command lines as people and scripts type them, parsed as sesamectl-commands
/// parses them, and the token shortcut's reading of the same lines.
struct ArgumentParsingTests {
    /// The command `arguments` parse to, as `T`.
    private func parsed<T: ParsableCommand>(_ arguments: [String], as type: T.Type) throws -> T {
        try #require(try Sesamectl.parseAsRoot(arguments) as? T, "\(arguments) is a \(T.self)")
    }

    @Test func tokenTakesTheAccountTheSocketAndTheFormatInAnyOrder() throws {
        let token = try parsed(["token", "--format", "exec-credential", "work", "--socket", "/run/s"], as: Token.self)
        #expect(token.account == "work" && token.options.socket == "/run/s" && token.format == .execCredential)
        let narrowed = try parsed(
            ["token", "work", "--scope", "read", "--scope", "write", "--audience", "api"],
            as: Token.self
        )
        #expect(narrowed.scopes == ["read", "write"] && narrowed.audience == "api")
    }

    @Test func tokenRefusesOptionsThatContradictEachOther() {
        for arguments in [
            ["token", "work", "--json", "--format", "plain"],
            ["token", "work", "--id-token", "--rejected"],
            ["token", "work", "--id-token", "--min-valid", "30"],
            ["token", "work", "--scope", "read", "--min-valid", "30"],
            ["token", "work", "--resource", "https://api.example", "--rejected"],
            ["token"],
            ["token", "work", "other"],
        ] {
            #expect(throws: (any Error).self, "\(arguments)") { try Sesamectl.parseAsRoot(arguments) }
        }
    }

    @Test func execRunsWhatFollowsTheTerminatorWithTheTokenInANamedVariable() throws {
        let exec = try parsed(
            ["exec", "--account", "work", "--env", "GH_TOKEN", "--", "git", "push", "--force"],
            as: Exec.self
        )
        #expect(exec.account == "work" && exec.env == "GH_TOKEN" && exec.command == ["git", "push", "--force"])
        #expect(throws: (any Error).self) { try Sesamectl.parseAsRoot(["exec", "--account", "work"]) }
        #expect(throws: (any Error).self) {
            try Sesamectl.parseAsRoot(["exec", "--account", "work", "--env", "NOT-A-NAME", "--", "true"])
        }
    }

    @Test func watchAndLoginTakeTheirRepeatedOptions() throws {
        let watch = try parsed(
            ["watch", "--since", "3", "--kind", "loggedIn", "--kind", "expired", "--no-follow"],
            as: Watch.self
        )
        #expect(watch.since == 3 && watch.kind == [.loggedIn, .expired] && watch.follow == false)
        #expect(throws: (any Error).self) { try Sesamectl.parseAsRoot(["watch", "--kind", "nosuch"]) }
        let login = try parsed(
            ["login", "google", "--name", "work", "--scope", "openid", "--scope", "email"],
            as: Login.self
        )
        #expect(login.provider == "google" && login.name == "work" && login.scope == ["openid", "email"])
    }

    /// The shortcut answers only command lines sesamectl-commands reads as the same plain
    /// `token ACCOUNT [--socket PATH]`, and leaves every other spelling to it.
    @Test func theShortcutReadsALineOnlyAsTheCommandsDo() throws {
        let lines: [[String]] = [
            ["token", "work"], ["token", "--socket", "/s", "work"], ["token", "work", "--socket=/s"],
            ["token", "work", "--json"], ["token", "--help"], ["token", "--", "work"], ["token", "a", "b"],
            ["token", "no\"body"], ["token", "work", "--socket"], ["token", "work", "--socket", "--json"],
            ["token", "work", "--socket", "/a", "--socket", "/b"], ["token", "-w"], ["token", ""], ["status", "work"],
        ]
        var answered = 0
        for line in lines {
            guard let shortcut = TokenShortcut(arguments: line) else { continue }
            answered += 1
            let token = try parsed(line, as: Token.self)
            #expect(!token.json && token.format == nil && token.scopes.isEmpty && !token.idToken, "\(line)")
            #expect(token.account == shortcut.account && token.options.socket == shortcut.socket, "\(line)")
        }
        #expect(
            TokenShortcut(arguments: ["token", "work", "--socket=/s"])
                == TokenShortcut(arguments: ["token", "--socket", "/s", "work"])
        )
        #expect(answered == 4, "the plain line, its two spellings of the socket, and an account with a quote")
        #expect(TokenShortcut(arguments: ["token", "work", "--json"]) == nil)
        #expect(TokenShortcut(arguments: ["token", "--", "work"]) == nil)
    }

    /// sesamectl names the method it calls itself, since it links no contract: it must be the contract's.
    @Test func theShortcutCallsTheContractsGetToken() {
        #expect(TokenShortcut.getToken == AccountsContract.getToken.qualifiedName)
    }
}
