import ArgumentParser
import Foundation
import SesameClient
import SesameVarlink

/// `sesamectl watch`: prints events as they happen, one line each.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print session events as they happen, one line each.",
        discussion: "The first line says from which sequence number on events are shown."
    )

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Print each event as one JSON object per line.")
    var json = false

    @Option(name: .long, parsing: .upToNextOption, help: "Only events of these accounts.")
    var account: [String] = []

    @Option(name: .long, help: "Replay events after this sequence number first.")
    var since: UInt64?

    func run() async throws {
        try await reportingFailures {
            let client = try await options.connect()
            let updates = try await client.events(accounts: account.isEmpty ? nil : account, since: since)
            do {
                for try await update in updates {
                    printLine(json ? update.jsonLine : update.textLine)
                }
            } catch VarlinkClientError.connectionClosed {
                // Falls through to the same message as a stream that ended without an error.
            }
            throw ExitFailure.message("sesamed closed the connection.")
        }
    }
}

extension SubscriptionUpdate {
    var textLine: String {
        switch self {
        case .ready(let sequence): "ready sequence=\(sequence)"
        }
    }

    var jsonLine: String {
        switch self {
        case .ready(let sequence): #"{"ready":{"sequence":\#(sequence)}}"#
        }
    }
}
