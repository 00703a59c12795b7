import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// Browser sessions across instances (docs/browser-sign-in.md, "Where sessions live"): two
    /// gateways on one PostgreSQL database in front of the demo's provider, a scripted browser
    /// signing in on one and going on on the other.
    @Suite("Browser sessions across instances (PostgreSQL)", .serialized, .timeLimit(.minutes(2)), .awaitsCleanups)
    struct SharedSessionsTests {
        /// Two instances sharing `cluster`'s new database, both using it for sessions.
        static func instances(
            _ cluster: PostgresCluster, tokenLifetimeSeconds: Int = 300
        ) async throws -> (a: SignInFixture, b: SignInFixture) {
            let database = try await cluster.createDatabase()
            let fixtures = try await SignInFixture.start(
                instances: 2, tokenLifetimeSeconds: tokenLifetimeSeconds,
                sharedState: [
                    "postgres": ["url": .string(cluster.gatewayURL(database: database)), "tls": "disable"],
                    "encryptionKeyBase64": "${STATE_KEY}",
                ],
                environment: cluster.environment.merging(["STATE_KEY": SharedStateTesting.keyBase64]) { $1 })
            for fixture in fixtures {
                try await SharedStateTesting.eventually("the instance keeps sessions in the database") {
                    let sessions = try Self.sessions(fixture)
                    return sessions.isInUse
                        && fixture.gateway.application.shared.sharedState?.wakeups.isListening == true
                }
            }
            return (fixtures[0], fixtures[1])
        }

        static func sessions(_ fixture: SignInFixture) throws -> PostgresSessionStore {
            try #require(fixture.gateway.application.shared.authentication.sessions as? PostgresSessionStore)
        }

        static let json = [("Accept", "application/json")]

        /// The session cookie's record as `fixture`'s instance holds it.
        static func held(_ fixture: SignInFixture, _ browser: ScriptedBrowser) throws -> SessionRecord? {
            let handle = try #require(
                browser.cookies["gateway-session"].flatMap { SessionHandle(cookieValue: $0[...]) })
            return try Self.sessions(fixture).held(handle.digest)
        }

        /// How soon another instance must follow a `NOTIFY`: within a second on an idle machine
        /// (docs/shared-state.md), 5 s on a loaded 2-core one. Without the notification the copy
        /// would serve the cookie until its idle timeout, minutes away.
        static let notified = Duration.seconds(5)

        /// Polls `fixture` with `browser`'s cookies (each time as they were) until it answers
        /// 401, for at most 10 s; how long that took from `since`.
        static func refused(
            by fixture: SignInFixture, _ browser: ScriptedBrowser, since: ContinuousClock.Instant
        ) async throws -> Duration {
            let deadline = since + .seconds(10)
            while ContinuousClock.now < deadline {
                var probe = browser
                let answer = try await probe.get(fixture.gateway, "/api/poll", headers: Self.json)
                if answer.status == 401 { return ContinuousClock.now - since }
                #expect(answer.status == 200, "\(answer.status) \(answer.text)")
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("the cookie still works after 10 s")
            throw TestClientError.timeout
        }

        /// `sid` (or, without one, `sub`) logged out at the provider, which delivers the logout
        /// token to instance A's back-channel logout endpoint (the only registered URI).
        static func logOut(sid: String?, sub: String?, on a: SignInFixture) async throws {
            let deliveries = await a.provider.endSessions(sub: sub, sid: sid)
            #expect(!deliveries.isEmpty && deliveries.allSatisfy { $0.status == 200 }, "\(deliveries)")
        }

        @Test func aSessionMadeOnOneInstanceWorksOnTheOtherAndASignOutThereEndsItHere() async throws {
            let cluster = try await PostgresCluster.shared()
            let (a, b) = try await Self.instances(cluster)
            atTestEnd {
                await b.stop(); await a.stop()
            }
            var browser = ScriptedBrowser()
            _ = try await a.signIn(&browser, to: "/")
            let issued = try #require(a.provider.lastIssuedTokens)
            #expect(try await browser.navigate(a.gateway, "/").status == 200)

            // B: no second sign-in, the same session, one read of the database.
            let codes = a.provider.tokenCalls.authorizationCode
            let onB = try await browser.navigate(b.gateway, "/reports")
            #expect(onB.status == 200, "\(onB.text)")
            #expect(onB.echoedHeader("authorization") == ["Bearer \(issued.accessToken)"])
            #expect(onB.echoedHeader("x-user-email") == ["alice@example.com"])
            for _ in 0..<3 { #expect(try await browser.get(b.gateway, "/api/x", headers: Self.json).status == 200) }
            #expect(a.provider.tokenCalls.authorizationCode == codes)
            #expect(try Self.sessions(b).databaseReads.load(ordering: .relaxed) == 1, "a known session costs no read")

            // Signed out on B: A refuses the cookie once notified (`notified`).
            let old = browser
            let out = try await browser.send(
                b.gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
            let signedOut = ContinuousClock.now
            #expect(out.status == 302)
            let location = try #require(out.header("location"))
            #expect(
                FormDecoding.value("id_token_hint", in: Substring(location.split(separator: "?")[1])) == issued.idToken)
            let took = try await Self.refused(by: a, old, since: signedOut)
            #expect(took <= Self.notified, "A refused the signed-out cookie after \(took)")
            var stale = old
            #expect(try await stale.navigate(a.gateway, "/").status == 302, "a navigation signs in again")
        }

        @Test func aBackChannelLogoutOnOneInstanceEndsTheSessionsOnTheOther() async throws {
            let cluster = try await PostgresCluster.shared()
            let (a, b) = try await Self.instances(cluster)
            atTestEnd {
                await b.stop(); await a.stop()
            }
            // Three browsers, each signed in on A and used on B: alice twice, the admin once.
            var browsers: [ScriptedBrowser] = []
            for user in ["alice@example.com", "alice@example.com", "admin@example.com"] {
                var browser = ScriptedBrowser()
                _ = try await a.signIn(&browser, to: "/", as: user)
                #expect(try await browser.get(b.gateway, "/api/x", headers: Self.json).status == 200)
                browsers.append(browser)
            }
            let first = try #require(try Self.held(b, browsers[0]))
            let second = try #require(try Self.held(b, browsers[1]))
            #expect(first.providerSessionID != nil)

            // By sid: only that provider session's session.
            try await Self.logOut(sid: first.providerSessionID, sub: nil, on: a)
            let bySID = try await Self.refused(by: b, browsers[0], since: .now)
            #expect(bySID <= Self.notified, "B refused the sid's session after \(bySID)")
            #expect(try await browsers[2].get(b.gateway, "/api/x", headers: Self.json).status == 200)

            // By sub: every session of the subject (alice's other one), not the admin's.
            try await Self.logOut(sid: nil, sub: second.subject, on: a)
            let bySubject = try await Self.refused(by: b, browsers[1], since: .now)
            #expect(bySubject <= Self.notified, "B refused the subject's session after \(bySubject)")
            #expect(try await browsers[2].get(b.gateway, "/api/x", headers: Self.json).status == 200)
            #expect(try await browsers[2].get(a.gateway, "/api/x", headers: Self.json).status == 200)
        }

        @Test func aSessionRefreshAcrossInstancesCallsTheProviderOnce() async throws {
            let cluster = try await PostgresCluster.shared()
            let (a, b) = try await Self.instances(cluster, tokenLifetimeSeconds: 60)
            atTestEnd {
                await b.stop(); await a.stop()
            }
            var browser = ScriptedBrowser()
            _ = try await a.signIn(&browser, to: "/")
            let first = try #require(a.provider.lastIssuedTokens?.accessToken)
            #expect(try await browser.get(b.gateway, "/api/x", headers: Self.json).status == 200)

            // Both instances' copies hold an expired access token now.
            a.gateway.clock.advance(by: 61)
            let calls = a.provider.tokenCalls.refreshToken
            let cookies = browser
            let responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for index in 0..<8 {
                    let instance = index % 2 == 0 ? a : b
                    group.addTask {
                        var tab = cookies
                        return try await tab.get(instance.gateway, "/api/r/\(index)", headers: Self.json)
                    }
                }
                return try await group.reduce(into: [TestResponse]()) { $0.append($1) }
            }
            #expect(responses.map(\.status) == Array(repeating: 200, count: 8), "\(responses.map(\.text))")
            #expect(a.provider.tokenCalls.refreshToken == calls + 1, "one refresh for both instances")
            let refreshed = try #require(a.provider.lastIssuedTokens?.accessToken)
            #expect(refreshed != first)
            #expect(responses.allSatisfy { $0.echoedHeader("authorization") == ["Bearer \(refreshed)"] })
            // Later requests on either instance carry the new token without another call.
            for fixture in [a, b, a, b] {
                let later = try await browser.get(fixture.gateway, "/api/later", headers: Self.json)
                #expect(later.status == 200)
                #expect(later.echoedHeader("authorization") == ["Bearer \(refreshed)"])
            }
            #expect(a.provider.tokenCalls.refreshToken == calls + 1)
        }

        @Test func withTheDatabaseDownKnownSessionsKeepWorkingOnBothInstances() async throws {
            // A cluster of its own: this test kills the server.
            let cluster = try await PostgresCluster.start()
            defer { cluster.stop() }
            let (a, b) = try await Self.instances(cluster)
            atTestEnd {
                await b.stop(); await a.stop()
            }
            var browser = ScriptedBrowser()
            _ = try await a.signIn(&browser, to: "/")
            #expect(try await browser.get(b.gateway, "/api/x", headers: Self.json).status == 200)

            try await cluster.kill()
            for fixture in [a, b] {
                try await SharedStateTesting.eventually("the instance reports the outage") {
                    let health = try await TestConnection.connect(port: fixture.gateway.adminPort).send(
                        .get("/healthz"))
                    return health.json?["status"] == "degraded"
                }
            }
            for fixture in [a, b, a, b] {
                #expect(try await browser.get(fixture.gateway, "/api/down", headers: Self.json).status == 200)
                #expect(try await browser.navigate(fixture.gateway, "/page").status == 200)
            }
            // A new sign-in during the outage is kept by the instance that made it; the other
            // does not know it, and says so without a 5xx.
            var during = ScriptedBrowser()
            _ = try await a.signIn(&during, to: "/")
            #expect(try await during.get(a.gateway, "/api/x", headers: Self.json).status == 200)
            var elsewhere = during
            #expect(try await elsewhere.get(b.gateway, "/api/x", headers: Self.json).status == 401)
            for fixture in [a, b] {
                let metrics = try await TestConnection.connect(port: fixture.gateway.adminPort).send(.get("/metrics"))
                #expect(metrics.text.contains("auth_gateway_shared_state_errors_total{operation="))
            }
        }
    }
}
