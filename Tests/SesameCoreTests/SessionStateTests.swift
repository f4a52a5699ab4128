import Foundation
import SesameCore
import Testing

@Suite struct SessionStateTests {
    @Test func allowsExactlyTheDocumentedTransitions() {
        let allowed: Set<String> = [
            "active>refreshing", "active>expired", "active>needsLogin", "active>loggedOut",
            "refreshing>active", "refreshing>expired", "refreshing>needsLogin", "refreshing>loggedOut",
            "expired>active", "expired>refreshing", "expired>needsLogin", "expired>loggedOut",
            "needsLogin>active", "needsLogin>loggedOut",
            "loggedOut>active",
        ]
        for from in SessionState.allCases {
            for to in SessionState.allCases {
                #expect(from.allows(to) == allowed.contains("\(from.rawValue)>\(to.rawValue)"), "\(from) -> \(to)")
            }
        }
    }

    @Test func tokenSetsNeverShowTheirTokens() {
        let tokens = TokenSet(accessToken: "AT-secret-1", refreshToken: "RT-secret-2", idToken: "ID-secret-3")
        for text in [
            tokens.description, tokens.debugDescription, "\(tokens)", String(reflecting: tokens), "\([tokens])",
        ] {
            #expect(!text.contains("secret"), "\(text)")
        }
        var dumped = ""
        dump(tokens, to: &dumped)
        #expect(!dumped.contains("secret"), "\(dumped)")
    }
}
