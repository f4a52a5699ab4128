import FoundationEssentials
import SesameCore
import SesameProtocol

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

    /// What became of the grant a login replaced, for the person; nil when it replaced none.
    static func sentence(for replaced: ReplacedGrant?) -> String? {
        guard let replaced else { return nil }
        if replaced.revokedRemotely { return "the grant this login replaced was revoked at the provider" }
        let why = (replaced.notRevokedReason ?? "no reason given").forDisplay(limit: 300)
        return replaced.retrying
            ? "the grant this login replaced is not revoked at the provider yet (\(why)); sesamed keeps it and tries again"
            : "the grant this login replaced was not revoked at the provider: \(why)"
    }

    /// Who an account is, as people are shown it: its display name, else its subject.
    static func name(of account: Account, limit: Int = 100) -> String {
        (account.displayName ?? account.subject).forDisplay(limit: limit)
    }

    static func accountLine(_ account: Account) -> String {
        let id = account.name.map { "\(account.id) (\($0))" } ?? account.id
        var line = "\(id)  \(account.provider)  \(name(of: account))  \(account.state.rawValue)"
        if let expiry = account.accessTokenExpiresAt {
            line += expiry > Date() ? "  expires \(time(expiry))" : "  expired"
        }
        return line
    }

    /// When the access token expires: its time, "expired" once that has passed (never a past
    /// time as if it were to come), or "-" without one.
    static func expiry(_ account: Account, now: Date = Date()) -> String {
        guard let expiry = account.accessTokenExpiresAt else { return "-" }
        return expiry > now ? time(expiry) : "expired"
    }

    /// The accounts as a table: aligned columns, the header unless `legend` is false, the
    /// state coloured when `terminal` allows colours.
    static func accountTable(_ accounts: [Account], legend: Bool, on terminal: Terminal, now: Date = Date())
        -> [String]
    {
        let rows = accounts.map { account in
            [
                account.id, account.name ?? "-", account.provider, name(of: account, limit: 40),
                account.state.rawValue, expiry(account, now: now),
            ]
        }
        let header = ["ACCOUNT", "NAME", "PROVIDER", "USER", "STATE", "EXPIRES"]
        return table(header, rows, legend: legend, on: terminal) { column, cell in
            column == 4 ? stateColour(cell) : nil
        }
    }

    /// `rows` as aligned columns under `header` (bold, unless `legend` is false); `colour`
    /// gives a cell's SGR colour, if it has one, when `terminal` allows colours.
    static func table(
        _ header: [String],
        _ rows: [[String]],
        legend: Bool,
        on terminal: Terminal,
        colour: (_ column: Int, _ cell: String) -> String? = { _, _ in nil }
    ) -> [String] {
        let table = (legend ? [header] : []) + rows
        let widths = header.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        return table.enumerated().map { index, row in
            let isHeader = legend && index == 0
            let cells = row.enumerated().map { column, cell -> String in
                // The last column is not padded: no trailing blanks.
                let padded =
                    column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
                if isHeader { return terminal.styled(padded, "1") }
                return colour(column, cell).map { terminal.styled(padded, $0) } ?? padded
            }
            return cells.joined(separator: "  ")
        }
    }

    /// The SGR colour of a state: green usable, yellow passing, red needs a person, faint gone.
    private static func stateColour(_ state: String) -> String {
        switch SessionState(rawValue: state) {
        case .active: "32"
        case .refreshing, .expired: "33"
        case .needsLogin: "31"
        case .loggedOut, nil: "2"
        }
    }
}
