import Foundation
import SesameCore

/// How sesamectl prints times, JSON and account tables.
enum Formatting {
    static func time(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func accountLine(_ account: Account) -> String {
        var line =
            "\(account.id)  \(account.provider)  \(account.displayName ?? account.subject)  \(account.state.rawValue)"
        if let expiry = account.accessTokenExpiresAt { line += "  expires \(time(expiry))" }
        return line
    }
}
