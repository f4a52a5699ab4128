import Foundation
import Logging
import SesameCore
import SesameStore

/// One sesamed as the benchmark runs it: a directory of its own with a config whose limits allow
/// 10,000 subscribers, the offline provider the end-to-end tests use, and a state directory.
struct SesameInstance {
    let tools: Tools
    let directory: String

    /// Where it listens.
    var socket: String { directory + "/run/io.sesame" }
    /// Its state directory (the store).
    var stateDirectory: String { directory + "/state" }
    /// The command line that starts it.
    var command: [String] {
        [
            tools.sesamed, "--config", directory + "/sesamed.toml", "--socket", socket, "--state-dir", stateDirectory,
            "--providers-dir", directory + "/providers.d",
        ]
    }

    /// The end-to-end tests' offline provider: configured, so ImportTokens accepts it, but unreachable.
    static let offlineProvider = """
        issuer = "https://accounts.example"
        discovery = false
        client_id = "sesame-bench"
        timeout = 2
        [endpoints]
        token = "http://127.0.0.1:9/token"
        revocation = "http://127.0.0.1:9/revoke"

        """

    /// The configuration: the defaults, with the limits raised for 10,000 subscribers.
    static let configuration = """
        [limits]
        connections_per_user = 30000
        subscriptions_per_user = 30000
        connections_total = 30000
        accounts_per_user = 2000

        """

    /// Writes the config and the provider file.
    func prepare() throws {
        let manager = FileManager.default
        try manager.createDirectory(atPath: directory + "/providers.d", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: directory + "/run", withIntermediateDirectories: true)
        try Self.configuration.write(toFile: directory + "/sesamed.toml", atomically: true, encoding: .utf8)
        try Self.offlineProvider.write(
            toFile: directory + "/providers.d/google.toml",
            atomically: true,
            encoding: .utf8
        )
    }

    /// Starts sesamed and waits until it answers.
    func start() throws -> Server {
        let server = try Server(command[0], Array(command.dropFirst()), log: directory + "/sesamed.log")
        try VarlinkSystem.awaitAnswer(tools: tools, socket: socket)
        return server
    }

    /// One call on a connection of its own; the reply.
    func call(_ message: String) throws -> HelperOutput {
        try Helpers.run(tools.client, ["call", "--socket", socket, "--call", message])
    }

    /// ImportTokens for google/`subject` with an access token of `tokenLength` characters.
    static func importMessage(subject: String, tokenLength: Int) -> String {
        let token = String(repeating: "t", count: tokenLength)
        return
            #"{"method":"io.sesame.Accounts.ImportTokens","parameters":{"provider":"google","subject":"\#(subject)","#
            + #""tokens":{"accessToken":"\#(token)","expiresIn":86400}}}"#
    }

    /// GetToken for `account`.
    static func getTokenMessage(account: String) -> String {
        #"{"method":"io.sesame.Accounts.GetToken","parameters":{"account":"\#(account)"}}"#
    }

    /// Imports google/`subject` and returns the account's id.
    func importAccount(subject: String, tokenLength: Int) throws -> String {
        let reply = try call(Self.importMessage(subject: subject, tokenLength: tokenLength))
        let json = try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any]
        let parameters = json?["parameters"] as? [String: Any]
        guard let id = (parameters?["account"] as? [String: Any])?["id"] as? String else {
            throw BenchError("ImportTokens failed: \(reply.body)")
        }
        return id
    }

    /// Fills the store with `accounts` accounts before sesamed starts, as EncryptedStore writes it
    /// (subjects subject-0 ..., owned by this uid, with the dev key sesamed then finds).
    func seed(accounts: Int) throws {
        try FileManager.default.createDirectory(
            atPath: stateDirectory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        let (store, _) = try EncryptedStore.open(
            directory: stateDirectory,
            keySources: KeySources(
                credentialsDirectory: nil,
                keyFile: nil,
                generatedKeyFile: stateDirectory + "/dev.key"
            ),
            onDamage: .refuse,
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        try store.save(Self.snapshot(accounts: accounts))
    }

    /// The size of one account of `snapshot(accounts:)` as a sealed store record: its JSON, the
    /// record's length, nonce and tag, and the rest of a change record around it.
    static var sealedAccountBytes: Int {
        let account = snapshot(accounts: 1).accounts[0]
        return ((try? JSONEncoder().encode(account).count) ?? 3000) + 4 + 12 + 16 + 48
    }

    /// `accounts` google accounts with tokens of realistic sizes, valid for a month.
    static func snapshot(accounts: Int) -> SessionSnapshot {
        let now = Date()
        let expiry = now.addingTimeInterval(30 * 86400)
        return SessionSnapshot(
            accounts: (0..<accounts).map { index in
                StoredAccount(
                    account: Account(
                        id: "google-\(index)",
                        provider: "google",
                        ownerUID: getuid(),
                        subject: "subject-\(index)",
                        scopes: ["openid", "email", "profile"],
                        state: .active,
                        accessTokenExpiresAt: expiry,
                        createdAt: now
                    ),
                    tokens: TokenSet(
                        accessToken: String(repeating: "a", count: 1200),
                        refreshToken: String(repeating: "r", count: 500),
                        idToken: String(repeating: "i", count: 900),
                        accessTokenExpiresAt: expiry
                    )
                )
            },
            lastSequence: 42
        )
    }
}

/// The sesamed every row but the last measures: one account imported with a token sized so that
/// GetToken's reply is `replyBytes`, and the sizes of its messages for the references to copy.
struct SesameUnderTest {
    let system: VarlinkSystem
    let sizes: MessageSizes
    let messages: VarlinkMessages
    let stateDirectory: String
    /// Where it listens, and the id of its one account.
    let socket: String
    let account: String

    /// Starts sesamed in `directory` and imports the account.
    static func start(tools: Tools, directory: String, replyBytes: Int) throws -> SesameUnderTest {
        let instance = SesameInstance(tools: tools, directory: directory)
        try instance.prepare()
        let server = try instance.start()
        do {
            let (account, tokenLength, reply) = try instance.accountAnswering(replyBytes: replyBytes)
            let messages = VarlinkMessages(
                getToken: SesameInstance.getTokenMessage(account: account),
                trigger: SesameInstance.importMessage(subject: "bench", tokenLength: tokenLength)
            )
            let event = try Helpers.run(
                tools.client,
                [
                    "event", "--socket", instance.socket, "--subscribe", messages.subscribe, "--trigger",
                    messages.trigger,
                ]
            )
            let sizes = MessageSizes(
                call: messages.getToken.utf8.count,
                reply: Int(reply),
                event: Int(try event.number("bytes"))
            )
            let startup = SesameInstance(tools: tools, directory: directory + "-startup")
            try startup.prepare()
            let system = VarlinkSystem(
                .sesame,
                tools: tools,
                socket: instance.socket,
                server: server,
                messages: messages,
                another: Launch(command: startup.command, socket: startup.socket)
            )
            return SesameUnderTest(
                system: system,
                sizes: sizes,
                messages: messages,
                stateDirectory: instance.stateDirectory,
                socket: instance.socket,
                account: account
            )
        } catch {
            server.stop()
            throw error
        }
    }
}

extension SesameInstance {
    /// Imports the benchmark's account with a token long enough that GetToken's reply is
    /// `replyBytes` long: the account, the token's length and the reply's measured length.
    fileprivate func accountAnswering(replyBytes: Int) throws -> (account: String, tokenLength: Int, reply: Double) {
        var tokenLength = 1024
        var account = try importAccount(subject: "bench", tokenLength: tokenLength)
        var reply = try call(SesameInstance.getTokenMessage(account: account)).number("bytes")
        if Int(reply) != replyBytes {
            // The expiry's and the id's lengths are sesamed's; the token makes up the difference.
            tokenLength += replyBytes - Int(reply)
            account = try importAccount(subject: "bench", tokenLength: tokenLength)
            reply = try call(SesameInstance.getTokenMessage(account: account)).number("bytes")
        }
        return (account, tokenLength, reply)
    }
}
