import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// Replays across instances (docs/browser-sign-in.md): two gateways on one PostgreSQL
    /// database. A sign-in callback used on one instance and replayed on the other, and a
    /// logout token's `jti` replayed on the other, are both refused.
    @Suite("Sign-in replays across instances (PostgreSQL)", .serialized, .timeLimit(.minutes(2)), .awaitsCleanups)
    struct SharedSessionAttackTests {
        /// Two instances whose one-time marks (flows, logout `jti`s) are shared: before the token
        /// tables are ready an instance checks them locally only (docs/shared-state.md).
        static func instances(_ cluster: PostgresCluster) async throws -> (a: SignInFixture, b: SignInFixture) {
            let (a, b) = try await SharedSessionsTests.instances(cluster)
            atTestEnd {
                await b.stop(); await a.stop()
            }
            for fixture in [a, b] {
                let shared = try #require(fixture.gateway.application.shared.sharedState)
                try await SharedStateTesting.eventually("the instance shares one-time marks") {
                    shared.dpopReplay.isInUse
                }
            }
            return (a, b)
        }

        @Test func aCallbackUsedOnOneInstanceIsRefusedOnTheOtherWithoutAnExchange() async throws {
            let cluster = try await PostgresCluster.shared()
            let (a, b) = try await Self.instances(cluster)
            var browser = ScriptedBrowser()
            let navigation = try await browser.navigate(a.gateway, "/reports")
            let authorize = try #require(navigation.header("location"))
            let callback = try #require(a.provider.signIn(authorizationURL: authorize, userName: "alice@example.com"))
            let path = try #require(
                callback.range(of: "/.gateway/callback").map { String(callback[$0.lowerBound...]) })
            // The attacker holds the same flow cookie and the same callback URL.
            var attacker = browser
            let first = try await browser.get(a.gateway, path)
            #expect(first.status == 302, "\(first.text)")
            let codes = a.provider.tokenCalls.authorizationCode

            let replayed = try await attacker.get(b.gateway, path, headers: SharedSessionsTests.json)
            #expect(replayed.status == 400, "\(replayed.text)")
            #expect(replayed.json?["type"]?.stringValue == "urn:auth-gateway:problem:signin.invalid_state")
            #expect(attacker.cookies["gateway-session"] == nil)
            #expect(a.provider.tokenCalls.authorizationCode == codes, "the replay reached the token endpoint")
            #expect(try SharedSessionsTests.sessions(b).count <= 1)
            // And back on A, where the flow was used: refused as well.
            var again = browser
            again.cookies["gateway-session"] = nil
            let onA = try await again.get(a.gateway, path, headers: SharedSessionsTests.json)
            #expect(onA.status == 400)
            #expect(a.provider.tokenCalls.authorizationCode == codes)
        }

        @Test func aLogoutTokensJTIUsedOnOneInstanceIsRefusedOnTheOther() async throws {
            let cluster = try await PostgresCluster.shared()
            let (a, b) = try await Self.instances(cluster)
            var first = ScriptedBrowser()
            _ = try await a.signIn(&first, to: "/")
            let token = try a.provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: "u-1001", jti: "jti-once")
            let taken = try await LogoutTokenAttackTests.post(a.gateway, token)
            #expect(taken.status == 200)
            // The same user signs in again; the replayed token must not end the new session.
            a.provider.skipsLoginFormWhenSignedIn = false
            var second = ScriptedBrowser()
            _ = try await a.signIn(&second, to: "/")
            #expect(try await second.get(b.gateway, "/api/x", headers: SharedSessionsTests.json).status == 200)
            let replayed = try await LogoutTokenAttackTests.post(b.gateway, token)
            #expect(replayed.status == 400)
            #expect(replayed.json == ["error": "invalid_request"])
            #expect(try await second.get(b.gateway, "/api/x", headers: SharedSessionsTests.json).status == 200)
            #expect(try await second.get(a.gateway, "/api/x", headers: SharedSessionsTests.json).status == 200)
        }
    }
}
