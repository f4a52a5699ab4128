import SesameProviders
import Testing

/// Provider text never carries what the request did, nor control characters, nor megabytes.
@Suite struct ProviderTextTests {
    @Test func secretsTheRequestCarriedAreCutOutAsSentAndFormEncoded() {
        let token = "rt/Ab+c=d"
        let text = ProviderText.sanitized("\(token) unknown; rt%2FAb%2Bc%3Dd also", redacting: [token])
        #expect(text == "[redacted] unknown; [redacted] also")
    }

    @Test func aCombiningMarkAfterASecretDoesNotHideIt() {
        let text = ProviderText.sanitized("x RT-abcdE\u{301} y", redacting: ["RT-abcdE"])
        #expect(text == "x [redacted]\\u{301} y")
    }

    /// A provider may echo a token in another case or cut short; both still give it away.
    @Test func echoesInAnotherCaseOrCutShortAreCutOutToo() {
        let token = "RT-8f2A91c0Dd77ee11"
        let text = ProviderText.sanitized(
            "refresh token \(token.lowercased()) unknown (\(token.prefix(10))…); rt-8f2 is fine",
            redacting: [token]
        )
        #expect(text == "refresh token [redacted] unknown ([redacted]…); rt-8f2 is fine")
    }

    /// However long the text, what is compared stays bounded and the cut is marked.
    @Test func aLongTextIsCutBeforeItIsSearched() {
        let text = ProviderText.sanitized(String(repeating: "A", count: 1_000_000), redacting: ["AAAAAAAB"], limit: 20)
        #expect(text == String(repeating: "A", count: 20) + "…")
    }

    @Test func aSecretContainingAnotherIsCutOutWhole() {
        #expect(ProviderText.sanitized("abcdefgh", redacting: ["bcde", "abcdefgh"]) == "[redacted]")
    }

    @Test func controlAndBidiCharactersAreEscapedAndTheLengthCapped() {
        #expect(ProviderText.sanitized("red\u{1B}[31m\u{202E}x\n") == "red\\u{1b}[31m\\u{202e}x\\u{a}")
        let long = ProviderText.sanitized(String(repeating: "a", count: 500), limit: 10)
        #expect(long == String(repeating: "a", count: 10) + "…")
    }

    @Test func errorCodesOutsideRFC6749AreReplaced() {
        #expect(ProviderText.errorCode("invalid_grant") == "invalid_grant")
        #expect(ProviderText.errorCode("bad\u{7}code").hasPrefix("(an error code outside"))
        #expect(ProviderText.errorCode("the-token-xyz1", redacting: ["the-token-xyz1"]) == "[redacted]")
    }
}
