import Foundation
import Testing

@testable import SesameDaemon

@Suite struct ConfigurationTests {
    private let base = DaemonConfiguration.defaults(environment: [:], uid: 0)

    @Test func defaultsToSystemPathsForRoot() {
        #expect(base.socketPath == "/run/sesame/io.sesame")
        #expect(base.stateDirectory == "/var/lib/sesame")
        #expect(base.socketMode == 0o666)
        #expect(base.shutdownTimeout == .seconds(5))
    }

    @Test func defaultsToXDGPathsForOtherUsers() {
        let user = DaemonConfiguration.defaults(
            environment: ["HOME": "/home/a", "XDG_RUNTIME_DIR": "/run/user/1000"],
            uid: 1000
        )
        #expect(user.socketPath == "/run/user/1000/sesame/io.sesame")
        #expect(user.stateDirectory == "/home/a/.local/state/sesame")
        #expect(
            DaemonConfiguration.defaultFilePath(environment: ["HOME": "/home/a"], uid: 1000)
                == "/home/a/.config/sesame/sesamed.toml"
        )
    }

    @Test func prefersTheDirectoriesSystemdMadeForTheUnit() {
        let unit = DaemonConfiguration.defaults(
            environment: ["RUNTIME_DIRECTORY": "/run/sesame-x:/run/other", "STATE_DIRECTORY": "/var/lib/sesame-x"],
            uid: 0
        )
        #expect(unit.socketPath == "/run/sesame-x/io.sesame")
        #expect(unit.stateDirectory == "/var/lib/sesame-x")
    }

    @Test func readsEverySetting() throws {
        let text = """
            [daemon]
            socket = "/tmp/s/io.sesame"
            socket_mode = 0o660
            state_directory = "/tmp/state"
            log_level = "debug"
            shutdown_timeout = 2

            [limits]
            max_message_size = 65536

            [sessions]
            expiring_margin = 5

            [events]
            queue_limit = 16
            history_limit = 0

            [store]
            key_file = "/etc/sesame/store.key"
            allow_generated_key = false
            on_damage = "move-aside"
            sequence_file = "/var/lib/sesame-marks/sessions.sequence"
            """
        let configuration = try ConfigurationFile.parse(text, path: "t.toml", onto: base)
        #expect(
            configuration
                == DaemonConfiguration(
                    socketPath: "/tmp/s/io.sesame",
                    socketMode: 0o660,
                    stateDirectory: "/tmp/state",
                    maximumMessageSize: 65536,
                    logLevel: .debug,
                    expiringMargin: .seconds(5),
                    subscriberQueueLimit: 16,
                    eventHistoryLimit: 0,
                    storeKeyFile: "/etc/sesame/store.key",
                    allowGeneratedKey: false,
                    onDamagedStore: .moveAside,
                    storeSequenceFile: "/var/lib/sesame-marks/sessions.sequence",
                    shutdownTimeout: .seconds(2)
                )
        )
    }

    @Test func theShippedExampleParses() throws {
        let example = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("etc/sesame/sesamed.toml")
        let configuration = try ConfigurationFile.load(path: example.path, onto: base, required: true)
        #expect(configuration == base, "the example documents the defaults")
    }

    @Test(arguments: [
        ("[daemon]\nsocekt = \"/x\"", ConfigurationError.unknownKey(path: "t.toml", key: "daemon.socekt")),
        ("[deamon]\n", .unknownKey(path: "t.toml", key: "deamon")),
        ("daemon = 1", .wrongType(path: "t.toml", key: "daemon", expected: "a table ([daemon])")),
        ("[daemon]\nsocket = 5", .wrongType(path: "t.toml", key: "daemon.socket", expected: "a string")),
        (
            "[daemon]\nsocket = \"relative\"",
            .invalidValue(path: "t.toml", key: "daemon.socket", reason: "must be an absolute path")
        ),
        (
            "[daemon]\nsocket_mode = 0o1777",
            .invalidValue(
                path: "t.toml",
                key: "daemon.socket_mode",
                reason: "must be a file mode between 0o000 and 0o777"
            )
        ),
        (
            "[limits]\nmax_message_size = 10",
            .invalidValue(path: "t.toml", key: "limits.max_message_size", reason: "must be between 1024 and 67108864")
        ),
        (
            "[events]\nqueue_limit = 0",
            .invalidValue(path: "t.toml", key: "events.queue_limit", reason: "must be between 1 and 65536")
        ),
        (
            "[daemon]\nshutdown_timeout = 301",
            .invalidValue(path: "t.toml", key: "daemon.shutdown_timeout", reason: "must be between 0 and 300")
        ),
        (
            "[daemon]\nshutdown_timeout = -1",
            .invalidValue(path: "t.toml", key: "daemon.shutdown_timeout", reason: "must be between 0 and 300")
        ),
        (
            "[daemon]\nshutdown_timeout = \"5s\"",
            .wrongType(path: "t.toml", key: "daemon.shutdown_timeout", expected: "an integer")
        ),
        ("[sessions]\nmargin = 1", .unknownKey(path: "t.toml", key: "sessions.margin")),
        (
            "[store]\nallow_generated_key = 1",
            .wrongType(path: "t.toml", key: "store.allow_generated_key", expected: "true or false")
        ),
        (
            "[store]\non_damage = \"delete\"",
            .invalidValue(path: "t.toml", key: "store.on_damage", reason: "must be one of refuse, move-aside")
        ),
        (
            "[daemon]\nlog_level = \"loud\"",
            .invalidValue(
                path: "t.toml",
                key: "daemon.log_level",
                reason: "must be one of trace, debug, info, notice, warning, error, critical"
            )
        ),
    ])
    func refusesBadSettingsByName(_ text: String, _ expected: ConfigurationError) {
        #expect(throws: expected) { try ConfigurationFile.parse(text, path: "t.toml", onto: base) }
    }

    @Test func pointsAtTheLineOfASyntaxError() {
        #expect {
            try ConfigurationFile.parse("[daemon]\nsocket = \n", path: "t.toml", onto: base)
        } throws: { error in
            guard case .syntax(let path, let line, _, _) = error as? ConfigurationError else { return false }
            return path == "t.toml" && line == 2
        }
    }

    /// Fuzzing findings (scripts/fuzz config): toml++ asserted, aborting the daemon, on a control
    /// character, and on a table name that starts with what no key can; both are refused first.
    @Test(arguments: [
        ("[\u{1}", "control character U+0001"), ("[\u{1}\u{0}limits]\n", "control character U+0001"),
        ("[daemon]\nlog_level = \"info\u{7f}\"\n", "control character U+007F"),
        ("[limits]\naccounts_per_user = 8\n[!ccetypess]\n", "'!' cannot start a table name"),
        ("[[ ?grants]]\n", "'?' cannot start a table name"), ("[events]\n[\n", "a table header needs a name"),
        ("[\u{05A4}grants]\n", "'\\u{05A4}' cannot start a table name"),
        ("[limits]\r\n[!x]\r\n", "'!' cannot start a table name"), ("\u{FEFF} [|", "'|' cannot start a table name"),
        ("scopes = [\"a\", }\n", "'}' cannot stand in an array"), ("x = [}}\n", "'}' cannot stand in an array"),
        ("x = [ # }\n 1, {a = '}'}, }]\n", "'}' cannot stand in an array"),
    ])
    func refusesWhatTheTOMLParserCannotTakeAsASyntaxError(_ text: String, _ expected: String) {
        #expect {
            try ConfigurationFile.parse(text, path: "t.toml", onto: base)
        } throws: { error in
            guard case .syntax(_, _, _, let message) = error as? ConfigurationError else { return false }
            return message.hasPrefix(expected)
        }
        #expect(throws: ConfigurationError.self) {
            try ProviderFiles.parse(text, path: "p.toml", defaultName: "p", credentialsDirectory: nil)
        }
    }

    /// A key of 30,000 parts overflowed toml++'s recursion over the tables it makes (a crash at
    /// start-up, or on a reload); keys nesting that deep, however written, are refused first.
    @Test(arguments: [
        "a" + String(repeating: ".a", count: 30_000) + " = 1\n",
        "[limits]\n[" + String(repeating: "a.", count: 30_000) + "a]\n",
        "x = " + String(repeating: "{a=", count: 1_001) + "1" + String(repeating: "}", count: 1_001) + "\n",
        // A multi-line string may end in up to five quotes: what follows is not in it.
        "t = { s = \"\"\"x\"\"\"\", " + String(repeating: "a.", count: 30_000) + "a = 1 }\n",
    ])
    func refusesKeysNestedTooDeepBeforeTheParserSeesThem(_ text: String) {
        #expect {
            try ConfigurationFile.parse(text, path: "t.toml", onto: base)
        } throws: { error in
            guard case .syntax(_, _, _, let message) = error as? ConfigurationError else { return false }
            return message.hasPrefix("keys nest too deep")
        }
        #expect(throws: ConfigurationError.self) {
            try ProviderFiles.parse(text, path: "p.toml", defaultName: "p", credentialsDirectory: nil)
        }
    }

    /// Inline tables in arrays, and braces in strings and comments, are what they seem.
    @Test func bracesThatCloseWhatIsOpenPassTheCheck() throws {
        try TOMLPrecheck.check("x = [{a = 1}, {b = [2, {c = '}'}]}] # }\n", path: "t.toml")
    }

    /// Dots and braces in strings and comments nest nothing.
    @Test func dotsInStringsAndCommentsAreNotCountedAsNesting() throws {
        let dots = String(repeating: ".", count: 2_000)
        let text =
            "# \(dots)\n[daemon]\nsocket = \"/run/\(dots)\" # \(dots)\nlog_level = 'info'\n"
            + "[sessions]\nexpiring_margin = 60\n"
        #expect(try ConfigurationFile.parse(text, path: "t.toml", onto: base).socketPath == "/run/\(dots)")
    }

    @Test func aMissingFileIsFineUnlessItWasNamed() throws {
        let missing = "/nonexistent/sesamed.toml"
        #expect(try ConfigurationFile.load(path: missing, onto: base, required: false) == base)
        #expect {
            try ConfigurationFile.load(path: missing, onto: base, required: true)
        } throws: { error in
            if case .unreadable(let path, _) = error as? ConfigurationError { return path == missing }
            return false
        }
    }
}
