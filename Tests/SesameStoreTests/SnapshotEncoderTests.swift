import Foundation
import SesameCore
import Testing

@testable import SesameStore

@Suite struct SnapshotEncoderTests {
    static func account(_ number: Int, token: String = "AT") -> StoredAccount {
        let account = Account(
            id: "google-\(number)",
            provider: "google",
            ownerUID: 1000,
            subject: "subject-\(number)",
            state: .active,
            createdAt: Date(timeIntervalSince1970: 1_800_000_000)
        )
        let tokens = TokenSet(
            accessToken: "\(token)-\(number)",
            refreshToken: "RT-\(number)",
            accessTokenExpiresAt: Date(timeIntervalSince1970: 1_800_003_600.25)
        )
        return StoredAccount(account: account, tokens: tokens, refreshAt: Date(timeIntervalSince1970: 1_800_003_000))
    }

    /// Every snapshot of a sequence of changes decodes to itself and is the document JSONEncoder
    /// makes of it: a change, a new account, a removal, a new order, a logout, none left.
    @Test func makesWhatJSONEncoderMakesAcrossChanges() throws {
        var encoder = SnapshotEncoder()
        var accounts = (0..<5).map { Self.account($0) }
        var snapshots = [SessionSnapshot(accounts: accounts, lastSequence: 1)]
        accounts[2] = Self.account(2, token: "renewed")
        snapshots.append(SessionSnapshot(accounts: accounts, lastSequence: 2))
        accounts.append(Self.account(5))
        accounts.remove(at: 0)
        snapshots.append(SessionSnapshot(accounts: accounts, lastSequence: 3))
        accounts.reverse()
        accounts[1].tokens = nil
        accounts[1].account.state = .loggedOut
        snapshots.append(SessionSnapshot(accounts: accounts, lastSequence: 4))
        snapshots.append(SessionSnapshot(accounts: [], lastSequence: 5))
        snapshots.append(SessionSnapshot(accounts: [Self.account(9)], lastSequence: UInt64.max))
        for snapshot in snapshots {
            let encoded = try encoder.encode(snapshot)
            #expect(try JSONDecoder().decode(SessionSnapshot.self, from: encoded) == snapshot)
            // The same document as JSONEncoder's, up to the order of object members (which
            // JSONEncoder itself does not fix).
            let expected = try JSONSerialization.jsonObject(with: JSONEncoder().encode(snapshot)) as? NSDictionary
            #expect(try JSONSerialization.jsonObject(with: encoded) as? NSDictionary == expected)
        }
    }

    /// An account changed in place under the same id is encoded again, not copied from before.
    @Test func anAccountChangedUnderTheSameIDIsEncodedAgain() throws {
        var encoder = SnapshotEncoder()
        var snapshot = SessionSnapshot(accounts: [Self.account(1)], lastSequence: 1)
        _ = try encoder.encode(snapshot)
        snapshot.accounts[0].expiringAnnounced = true
        let decoded = try JSONDecoder().decode(SessionSnapshot.self, from: try encoder.encode(snapshot))
        #expect(decoded.accounts[0].expiringAnnounced)
    }
}

extension SnapshotEncoderTests {
    /// The JSON holds every token in the clear: it is wiped once sealed, and the memory kept
    /// for the next save still makes the next snapshot right.
    @Test func wipesTheJSONOnceSealedAndReusesItsMemory() throws {
        var encoder = SnapshotEncoder()
        let first = SessionSnapshot(accounts: (0..<3).map { Self.account($0) }, lastSequence: 1)
        let sealedLength = try encoder.withEncoded(first) { json throws in
            #expect(try JSONDecoder().decode(SessionSnapshot.self, from: json) == first)
            return json.count
        }
        #expect(encoder.plaintext.count == sealedLength)
        #expect(encoder.plaintext.allSatisfy { $0 == 0 })
        let second = SessionSnapshot(accounts: [Self.account(7, token: "other")], lastSequence: 2)
        try encoder.withEncoded(second) { json throws in
            #expect(try JSONDecoder().decode(SessionSnapshot.self, from: json) == second)
        }
        #expect(encoder.plaintext.allSatisfy { $0 == 0 })
    }
}
