import ArgumentParser
import SesameClient

/// `sesamectl rekey`: re-seal the token store under a new key (root).
struct Rekey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Seal the token store under a new key (root only).",
        discussion: """
            With a key file, sesamed makes a new key and replaces the old one; at no moment does \
            neither key open the store. With a systemd credential, install the new credential as \
            sesame.key (keeping the old one as sesame.key.previous), restart, and run this.
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await reportingFailures {
            let keyID = try await options.withClient { try await $0.rekey() }
            printLine("token store sealed with key \(keyID)")
        }
    }
}
