import Foundation
import SesameCore
import SesameCoreTesting
import Synchronization
import Testing

@testable import SesameProviders

/// The device flow (RFC 8628) over the scripted transport, its pace on the test clock.
extension OAuthExchangeTests {
    private func startDeviceLogin(expiresIn: Int = 600, interval: Int = 7) async throws -> DeviceAuthorization {
        transport.on(
            Self.device,
            Reply.json([
                "device_code": "DEVICE-SECRET", "user_code": "WDJB-MJHT", "expires_in": expiresIn,
                "verification_uri": "https://idp.example/activate", "interval": interval,
            ])
        )
        return try await provider().startDeviceLogin(scopes: ["profile"])
    }

    @Test func aDeviceLoginPollsAtTheIntervalAndFiveSecondsSlowerAfterSlowDown() async throws {
        let authorization = try await startDeviceLogin()
        #expect(transport.requests(to: Self.device).first?.form == ["scope": "profile"])
        #expect(authorization.userCode == "WDJB-MJHT" && authorization.expiresAt == clock.now.addingTimeInterval(600))
        transport.on(
            Self.token,
            Reply.json(.badRequest, ["error": "authorization_pending"]),
            Reply.json(.badRequest, ["error": "slow_down"]),
            Reply.json(["access_token": "ACCESS-1", "token_type": "Bearer"])
        )
        transport.on(Self.userinfo, Reply.json(["sub": "alice", "name": "Alice"]))
        let provider = provider()
        let login = Task { try await provider.finishDeviceLogin(authorization, polling: .unpaid) }

        // RFC 8628 §3.5: polls `interval` apart; slow_down adds 5 s for this and later polls.
        for (wait, polls) in [(6, 0), (1, 1), (7, 2), (11, 2)] {
            #expect(await clock.untilSleeping())
            clock.advance(by: .seconds(wait))
            #expect(await clock.untilSleeping(), "still polling after \(wait) s more")
            #expect(transport.requests(to: Self.token).count == polls, "after \(wait) s more")
        }
        clock.advance(by: .seconds(1))
        let result = try await login.value
        #expect(transport.requests(to: Self.token).count == 3)
        #expect(result.subject == "alice" && result.displayName == "Alice")
        let poll = try #require(transport.requests(to: Self.token).last)
        #expect(poll.form["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code")
        #expect(poll.form["device_code"] == "DEVICE-SECRET")
        // Without an ID token (RFC 8628 §3.5) the userinfo endpoint says who it is (OIDC Core §5.3).
        #expect(transport.requests(to: Self.userinfo).first?.headers.first(name: "Authorization") == "Bearer ACCESS-1")
    }

    /// Each poll is paid for from the caller's allowance first; while it cannot be, the poll
    /// waits as long as the allowance says, and the person hears why once.
    @Test func aPollWaitsUntilItIsPaidFor() async throws {
        let authorization = try await startDeviceLogin(interval: 5)
        transport.on(
            Self.token,
            Reply.json(.badRequest, ["error": "authorization_pending"]),
            Reply.json(["access_token": "ACCESS-1", "token_type": "Bearer"])
        )
        transport.on(Self.userinfo, Reply.json(["sub": "alice"]))
        // The first poll is paid at once, the second only after two refusals of 10 s each.
        let refusals = Mutex([Duration?.none, .seconds(10), .seconds(10)])
        let reports = Mutex<[String?]>([])
        let polling = DevicePolling(
            onTrouble: { trouble in reports.withLock { $0.append(trouble) } },
            pay: { refusals.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
        )
        let provider = provider()
        let login = Task { try await provider.finishDeviceLogin(authorization, polling: polling) }
        for (wait, polls) in [(5, 1), (5, 1), (10, 1), (9, 1), (1, 2)] {
            #expect(await clock.untilSleeping())
            clock.advance(by: .seconds(wait))
            if polls == 2 { break }
            #expect(await clock.untilSleeping(), "still polling after \(wait) s more")
            #expect(transport.requests(to: Self.token).count == polls, "after \(wait) s more")
        }
        _ = try await login.value
        #expect(transport.requests(to: Self.token).count == 2)
        #expect(reports.withLock { $0 } == [DeviceLoginTrouble.unpaid])
    }

    @Test func aDeviceCodeThatRunsOutEndsTheLoginAsExpired() async throws {
        let authorization = try await startDeviceLogin(expiresIn: 10, interval: 5)
        transport.on(Self.token, Reply.json(.badRequest, ["error": "authorization_pending"]))
        let provider = provider()
        let login = Task { try await provider.finishDeviceLogin(authorization, polling: .unpaid) }
        await clock.untilSleeping()
        clock.advance(by: .seconds(5))
        await clock.untilSleeping()
        clock.advance(by: .seconds(5))
        await #expect(throws: ProviderError.expired) { try await login.value }
        #expect(transport.requests(to: Self.token).count == 1)
    }

    @Test func aLoginWhosePersonCannotBeNamedRevokesWhatWasIssued() async throws {
        let authorization = try await startDeviceLogin(interval: 1)
        transport.on(
            Self.token,
            Reply.json(["access_token": "ACCESS-1", "refresh_token": "REFRESH-1", "token_type": "Bearer"])
        )
        transport.on(Self.userinfo, Reply.json(["sub": ""]))
        transport.on(Self.revocation, Reply.text(.ok, ""))
        let provider = provider()
        let login = Task { try await provider.finishDeviceLogin(authorization, polling: .unpaid) }
        await clock.untilSleeping()
        clock.advance(by: .seconds(1))
        await #expect(throws: ProviderError.self) { try await login.value }
        // Nobody holds the grant, so it must not stay valid at the provider.
        #expect(transport.requests(to: Self.revocation).compactMap { $0.form["token"] } == ["REFRESH-1", "ACCESS-1"])
    }
}
