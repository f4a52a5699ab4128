import SesameClient
import SesameCore
import SesameWire
import Testing

@testable import sesamectl_commands

/// What sesamectl says of sesamed's errors: the account as the caller named it, and for a
/// missing one, which sesamed was asked when it is not the system's.
struct ErrorSentenceTests {
    @Test func anAccountIsNamedAsTheCallerNamedIt() {
        let failed = SesameError.session(.refreshFailed(account: "local-e783095d", reason: "HTTP 503"))
        #expect(
            failed.naming("work").sentence(askedAt: SocketPaths.system)
                == "could not refresh work (HTTP 503); `sesamectl refresh work` tries again now."
        )
        #expect(SesameError.session(.needsLogin("local-e783095d")).naming("work").sentence.hasPrefix("work needs"))
        #expect(SesameError.disconnected.naming("work") == .disconnected)
    }

    @Test func aMissingAccountAtTheSystemsSesamedIsSaidShortly() {
        #expect(
            SesameError.session(.noSuchAccount("work")).sentence(askedAt: SocketPaths.system)
                == "no account work; see `sesamectl accounts`."
        )
    }

    @Test func aMissingAccountAtAnotherSesamedNamesItAndTheSystems() {
        let sentence = SesameError.session(.noSuchAccount("work")).sentence(askedAt: "/run/user/1000/sesame/io.sesame")
        #expect(sentence.hasPrefix("no account work at /run/user/1000/sesame/io.sesame, the sesamed asked"))
        #expect(sentence.contains("`--socket /run/sesame/io.sesame` asks that one"))
    }
}
