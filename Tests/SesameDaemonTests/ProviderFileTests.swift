import SesameProviders
import Testing

@testable import SesameDaemon

/// Provider files: the keys for servers without discovery or ID tokens, and the two timeouts.
@Suite struct ProviderFileTests {
    private func parse(_ text: String) throws -> ProviderConfiguration {
        try ProviderFiles.parse(text, path: "p.toml", defaultName: "p", credentialsDirectory: nil)
    }

    @Test func aServerWithoutDiscoveryNamesItsEndpointsIncludingUserinfo() throws {
        let provider = try parse(
            """
            issuer = "https://id.example"
            discovery = false
            client_id = "c"
            [endpoints]
            token = "https://id.example/token"
            userinfo = "https://id.example/me"
            """
        )
        #expect(!provider.discovery && provider.endpoints.userinfoEndpoint == "https://id.example/me")
    }

    @Test func withoutDiscoveryATokenEndpointIsRequired() {
        #expect(throws: ConfigurationError.self) {
            try parse("issuer = \"https://id.example\"\ndiscovery = false\nclient_id = \"c\"\n")
        }
    }

    @Test func tokenRequestsWaitLongerThanCallersByDefaultAndNeverShorter() throws {
        let provider = try parse("issuer = \"https://id.example\"\nclient_id = \"c\"\ntimeout = 5\n")
        #expect(provider.requestTimeout == .seconds(5) && provider.tokenRequestTimeout == .seconds(120))
        #expect(throws: ConfigurationError.self) {
            try parse("issuer = \"https://id.example\"\nclient_id = \"c\"\ntimeout = 30\ntoken_timeout = 10\n")
        }
    }

    @Test func theFlowIsSpelledAsTheAPISpellsItAndTheOldSpellingReadsWithANotice() throws {
        let file = "issuer = \"https://id.example\"\nclient_id = \"c\"\n"
        let current = try parse(file + "flow = \"authorizationCode\"\n")
        #expect(current.flow == .authorizationCode && current.notices.isEmpty)
        let old = try parse(file + "flow = \"authorization_code\"\n")
        #expect(old.flow == .authorizationCode)
        #expect(old.notices == [#"p.toml: flow = "authorization_code" is the old spelling; write "authorizationCode""#])
        #expect(try parse(file + "flow = \"device\"\n").notices.isEmpty)
        #expect(throws: ConfigurationError.self) { try parse(file + "flow = \"authorization-code\"\n") }
    }
}

/// What a reload says needs a restart: only settings it did not apply.
@Suite struct ReloadTests {
    private let running = DaemonConfiguration(socketPath: "/run/s", stateDirectory: "/var/lib/s")

    @Test func settingsAppliedLiveNeverAskForARestart() {
        var reloaded = running
        reloaded.providersDirectory = "/elsewhere"
        reloaded.userLimits = UserLimits()
        #expect(Reload.pendingRestart(reloaded, running: running).isEmpty)
    }

    @Test func otherChangedSettingsAreNamed() {
        var reloaded = running
        reloaded.socketMode = 0o660
        reloaded.refreshAhead = false
        #expect(Reload.pendingRestart(reloaded, running: running) == ["socketMode", "refreshAhead"])
    }
}
