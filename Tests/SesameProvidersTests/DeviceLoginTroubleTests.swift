import Foundation
import SesameCore
import SesameCoreTesting
import Synchronization
import Testing

@testable import SesameProviders

/// Device polling tells its caller about trouble at the provider as it happens, in fixed
/// sentences, and when it has passed; the provider's own words never.
extension OAuthExchangeTests {
    @Test func troubleWhilePollingIsReportedInFixedSentencesAndItsPassingOnce() async throws {
        transport.on(
            Self.device,
            Reply.json([
                "device_code": "DEVICE-SECRET", "user_code": "WDJB-MJHT", "expires_in": 600,
                "verification_uri": "https://idp.example/activate", "interval": 1,
            ])
        )
        let authorization = try await provider().startDeviceLogin(scopes: ["profile"])
        transport.on(
            Self.token,
            Reply.text(.serviceUnavailable, "<h1>down DEVICE-SECRET</h1>"),
            Reply.text(.serviceUnavailable, "<h1>down DEVICE-SECRET</h1>"),
            Reply.json(.badRequest, ["error": "authorization_pending"]),
            Reply.json(.badRequest, ["error": "authorization_pending"]),
            Reply.json(["access_token": "ACCESS-1", "token_type": "Bearer"])
        )
        transport.on(Self.userinfo, Reply.json(["sub": "alice"]))
        let reports = Mutex<[String?]>([])
        let provider = provider()
        let login = Task {
            try await provider.finishDeviceLogin(
                authorization,
                polling: DevicePolling(onTrouble: { trouble in reports.withLock { $0.append(trouble) } }, pay: { nil })
            )
        }
        for _ in 0..<5 {
            await clock.untilSleeping()
            clock.advance(by: .seconds(1))
        }
        #expect(try await login.value.subject == "alice")
        #expect(
            reports.withLock { $0 }
                == ["the provider answered 503; still trying", "the provider answered 503; still trying", nil]
        )
    }

    @Test func troubleSentencesNameOnlyTheKindOfFailure() {
        #expect(DeviceLoginTrouble.sentence(for: "HTTP 429") == "the provider answered 429; still trying")
        #expect(DeviceLoginTrouble.sentence(for: "timed out after 10 s").hasPrefix("the provider did not answer"))
        #expect(DeviceLoginTrouble.sentence(for: "HTTP 5x3 SECRET") == "cannot reach the provider; still trying")
    }
}
