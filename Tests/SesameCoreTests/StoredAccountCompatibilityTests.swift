import Foundation
import SesameCore
import Testing

/// A store written before accounts had names and refresh-token warnings still reads: the new
/// fields are optional and absent there.
struct StoredAccountCompatibilityTests {
    @Test func anAccountStoredWithoutTheNewerFieldsDecodes() throws {
        var account = Account(
            id: "google-0123abcd",
            provider: "google",
            ownerUID: 1000,
            subject: "alice",
            state: .active,
            createdAt: Date(timeIntervalSince1970: 1_800_000_000)
        )
        account.name = "work"
        var stored = StoredAccount(account: account, tokens: TokenSet(accessToken: "AT-1", scopes: []))
        stored.refreshTokenWarnedFor = Date(timeIntervalSince1970: 1_800_000_000)
        let encoder = JSONEncoder()
        var object = try #require(
            try JSONSerialization.jsonObject(with: encoder.encode(stored)) as? [String: Any]
        )
        object["refreshTokenWarnedFor"] = nil
        var older = try #require(object["account"] as? [String: Any])
        older["name"] = nil
        object["account"] = older
        let decoded = try JSONDecoder().decode(StoredAccount.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(decoded.account.name == nil && decoded.refreshTokenWarnedFor == nil)
        #expect(decoded.account.id == account.id && decoded.tokens == stored.tokens)
    }
}
