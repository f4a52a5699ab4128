import Crypto
import Foundation
import SesameProviders
import Testing

@testable import SesameDaemon

/// Provider files with `type`: the documented defaults, each type's own keys, and the keys
/// that are refused.
@Suite struct ProviderTypeTests {
    private func parse(_ text: String, credentials: String? = nil) throws -> ProviderConfiguration {
        try ProviderFiles.parse(text, path: "p.toml", defaultName: "p", credentialsDirectory: credentials)
    }

    private func secretFile(_ text: String = "s3cret", mode: mode_t = 0o600) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-\(UUID().uuidString)").path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    @Test func aKakaoFileNeedsOnlyTheClientIdAndGetsKakaosDocumentedEndpoints() throws {
        let provider = try parse("type = \"kakao\"\nclient_id = \"rest-api-key\"\n")
        guard case .kakao(let settings) = provider.kind else { Issue.record("not kakao"); return }
        #expect(provider.endpoints.tokenEndpoint == "https://kauth.kakao.com/oauth/token")
        #expect(provider.endpoints.authorizationEndpoint == "https://kauth.kakao.com/oauth/authorize")
        #expect(settings.userEndpoint == "https://kapi.kakao.com/v2/user/me" && settings.logoutMethod == .logout)
        #expect(provider.flow == .authorizationCode && !provider.discovery && provider.scopes.isEmpty)
    }

    @Test func everyKakaoURLCanBeOverriddenAndUnlinkChosen() throws {
        let provider = try parse(
            """
            type = "kakao"
            client_id = "k"
            logout_method = "unlink"
            [endpoints]
            token = "http://127.0.0.1:1/token"
            user = "http://127.0.0.1:1/me"
            unlink = "http://127.0.0.1:1/unlink"
            token_info = "http://127.0.0.1:1/info"
            """
        )
        guard case .kakao(let settings) = provider.kind else { Issue.record("not kakao"); return }
        #expect(provider.endpoints.tokenEndpoint == "http://127.0.0.1:1/token")
        #expect(settings.logoutMethod == .unlink && settings.unlinkEndpoint == "http://127.0.0.1:1/unlink")
        #expect(
            settings.userEndpoint == "http://127.0.0.1:1/me" && settings.tokenInfoEndpoint == "http://127.0.0.1:1/info"
        )
    }

    @Test func anotherTypesEndpointKeyIsRefused() {
        #expect(throws: ConfigurationError.unknownKey(path: "p.toml", key: "endpoints.user")) {
            try parse(
                "type = \"naver\"\nclient_id = \"n\"\nclient_secret_file = \"/x\"\n[endpoints]\nuser = \"https://a.example\"\n"
            )
        }
    }

    @Test func naverAndGoogleRequireASecretAndGoogleAsksForOfflineAccess() throws {
        #expect(throws: ConfigurationError.self) { try parse("type = \"naver\"\nclient_id = \"n\"\n") }
        #expect(throws: ConfigurationError.self) { try parse("type = \"google\"\nclient_id = \"g\"\n") }
        let google = try parse("type = \"google\"\nclient_id = \"g\"\nclient_secret_file = \"\(try secretFile())\"\n")
        #expect(google.issuer == "https://accounts.google.com" && google.discovery)
        #expect(google.authorizationParameters == ["access_type": "offline"])
        #expect(google.scopes == ["openid", "email", "profile"])
    }

    @Test func authorizationParametersAddToTheDefaultsButNeverReplaceWhatSesameSets() throws {
        let secret = try secretFile()
        let google = try parse(
            "type = \"google\"\nclient_id = \"g\"\nclient_secret_file = \"\(secret)\"\n"
                + "[authorization_parameters]\nprompt = \"consent\"\n"
        )
        #expect(google.authorizationParameters == ["access_type": "offline", "prompt": "consent"])
        for reserved in ["state", "code_challenge", "redirect_uri", "nonce"] {
            #expect(throws: ConfigurationError.self) {
                try parse(
                    "issuer = \"https://a.example\"\nclient_id = \"c\"\n[authorization_parameters]\n\(reserved) = \"x\"\n"
                )
            }
        }
    }

    @Test func aRegisteredRedirectMustBeLoopbackWithAPort() throws {
        let ok = try parse("type = \"kakao\"\nclient_id = \"k\"\nredirect_uri = \"http://127.0.0.1:8765/callback\"\n")
        #expect(ok.redirectURI == "http://127.0.0.1:8765/callback")
        for bad in [
            "https://app.example/cb", "http://127.0.0.1/cb", "http://10.0.0.1:80/cb", "http://localhost:8765/cb",
            "http://127.0.0.1:70000/cb",
        ] {
            #expect(throws: ConfigurationError.self) {
                try parse("type = \"kakao\"\nclient_id = \"k\"\nredirect_uri = \"\(bad)\"\n")
            }
        }
    }

    @Test func appleNeedsTeamKeyAndAPrivateKeyOnlyItsOwnerCanRead() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        let header = "type = \"apple\"\nclient_id = \"com.example.app\"\nteam_id = \"TEAM\"\nkey_id = \"KEY\"\n"
        let provider = try parse(header + "private_key_file = \"\(try secretFile(pem))\"\n")
        guard case .apple(let settings) = provider.kind else { Issue.record("not apple"); return }
        #expect(settings.teamID == "TEAM" && provider.endpoints.tokenEndpoint == "https://appleid.apple.com/auth/token")
        #expect(!"\(provider.kind)".contains("PRIVATE KEY"))
        #expect(throws: ConfigurationError.self) {
            try parse(header + "private_key_file = \"\(try secretFile(pem, mode: 0o644))\"\n")
        }
        #expect(throws: ConfigurationError.self) {
            try parse(header + "private_key_file = \"\(try secretFile("not a key"))\"\n")
        }
        #expect(throws: ConfigurationError.self) {
            try parse(header + "private_key_file = \"\(try secretFile(pem))\"\nclient_secret_file = \"/x\"\n")
        }
    }

    @Test func aFlowTheTypeDoesNotOfferIsRefusedAtLoad() {
        #expect(throws: ConfigurationError.self) {
            try parse("type = \"kakao\"\nclient_id = \"k\"\nflow = \"device\"\n")
        }
    }

    @Test func anUnknownTypeIsRefusedNamingTheTypes() {
        #expect(
            throws: ConfigurationError.invalidValue(
                path: "p.toml",
                key: "type",
                reason: "must be one of oidc, kakao, naver, google, apple"
            )
        ) {
            try parse("type = \"github\"\nclient_id = \"c\"\nissuer = \"https://a.example\"\n")
        }
    }

    @Test(arguments: ["kakao", "naver", "google", "apple"])
    func theShippedPresetIsCompleteWithOnlyTheRegisteredValuesFilledIn(type: String) throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let preset = repository.appendingPathComponent("etc/sesame/providers.d/\(type).toml.sample").path
        let credentials = FileManager.default.temporaryDirectory.appendingPathComponent("creds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        for name in ["naver.client-secret", "google.client-secret"] {
            try "secret".write(to: credentials.appendingPathComponent(name), atomically: false, encoding: .utf8)
        }
        try P256.Signing.PrivateKey().pemRepresentation.write(
            to: credentials.appendingPathComponent("apple.p8"),
            atomically: false,
            encoding: .utf8
        )
        let provider = try ProviderFiles.parse(
            try String(contentsOfFile: preset, encoding: .utf8),
            path: preset,
            defaultName: type,
            credentialsDirectory: credentials.path
        )
        #expect(provider.kind.typeName == type && provider.endpoints.tokenEndpoint != nil || type == "google")
    }
}
