/// `sesamectl token`'s GetToken on the wire, written and read with the Varlink layer's own pieces
/// (the scan sesamed checks every call with, `JSONShape`), so that sesamectl links no JSON
/// decoder, nor the Foundation that comes with one. Whatever falls outside what these read
/// exactly is not guessed at: it is left to sesamectl-commands, which decodes every reply.
package enum GetTokenWire {
    /// The GetToken method of `io.sesame.Accounts` (SesameProtocol's `AccountsContract.getToken`,
    /// which this program does not link; the end-to-end tests run it against sesamed).
    package static let getToken = "io.sesame.Accounts.GetToken"

    /// What sesamed's reply says.
    package enum Reply: Equatable {
        /// The access token.
        case token(String)
        /// An error reply (which never holds a token), to be worded by sesamectl-commands.
        case error
        /// Anything else: not JSON, not a reply, or a token with escapes in its text.
        case unread
    }

    /// Whether `account` goes into a call as it is: a JSON string needs nothing escaped in it
    /// but a quote, a backslash and the control characters (RFC 8259 §7), which no account id or
    /// name holds; a command line that has one is left to sesamectl-commands.
    package static func fitsUnescaped(_ account: String) -> Bool {
        account.utf8.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// The call, NUL included, as every Sesame client writes it (keys sorted, no spaces), for
    /// an account that `fitsUnescaped`.
    package static func frame(account: String) -> [UInt8] {
        Array(#"{"method":"\#(getToken)","parameters":{"account":"\#(account)"}}"#.utf8) + [0]
    }

    /// Reads `received` (one whole reply, without its NUL) after the scan has checked all of it
    /// against RFC 8259: its top-level `error`, or the `accessToken` in its `parameters`. An
    /// error reply's parameters are the error's, never read as a token.
    package static func reply(_ received: [UInt8]) -> Reply {
        received.withUnsafeBytes { bytes -> Reply in
            let scanned = try? JSONShape.scan(
                bytes,
                depthLimit: JSONShape.maximumNesting,
                keepingMembersOf: Array("parameters".utf8)
            )
            guard let document = scanned ?? nil else { return .unread }
            if let error = document.members.first(where: { $0.name.reads(Array("error".utf8), in: bytes) }) {
                return string(at: error.value, in: bytes) == nil ? .unread : .error
            }
            let token = document.inner?.first { $0.name.reads(Array("accessToken".utf8), in: bytes) }
            return token.flatMap { string(at: $0.value, in: bytes) }.map(Reply.token) ?? .unread
        }
    }

    /// The text of the string value at `range`, when it has no escape in it (a token as sesamed
    /// writes it: slashes unescaped); nil for any other value.
    private static func string(at range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> String? {
        guard case .text(let text)? = JSONShape.string(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
            return nil
        }
        return text
    }
}
