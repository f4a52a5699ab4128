import ArgumentParser
import Testing

@testable import sesamectl_commands

/// Every command names itself, so that starting sesamectl never derives a name from a type.
struct CommandNameTests {
    /// A derived name costs a search through every protocol conformance in the binary per
    /// command, at every start; a named one costs no search. Nested command groups count too.
    @Test func everyCommandHasAnExplicitName() {
        var commands: [any ParsableCommand.Type] = [Sesamectl.self]
        while let command = commands.popLast() {
            #expect(command.configuration.commandName != nil, "\(command) has no commandName")
            commands += command.configuration.subcommands
        }
    }

    /// The explicit names are the ones people type, as documented in the manual.
    @Test func theNamesAreTheDocumentedVerbs() {
        let names = Sesamectl.configuration.subcommands.map { $0.configuration.commandName }
        #expect(
            names == [
                "status", "accounts", "providers", "login", "token", "exec", "refresh", "import", "logout",
                "remove", "rename", "watch", "share", "rekey",
            ]
        )
    }
}
