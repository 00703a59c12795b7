import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

extension PostgreSQLTests {
    /// Shared state (docs/shared-state.md) end to end: `auth-gateway serve` processes sharing one
    /// throwaway PostgreSQL database, a RainMaker-style auth service that rotates refresh tokens
    /// and refuses reuse. One test at a time: each runs two debug-build gateways, and the rest of
    /// the suite has timing-sensitive tests on the same two cores.
    @Suite(
        "Shared state across instances (processes, PostgreSQL)", .serialized, .timeLimit(.minutes(2)), .awaitsCleanups)
    struct SharedStateTests {
        static let stateKey = Data((0..<32).map { UInt8(255 - $0) }).base64EncodedString()

        /// A `serve` process configured for `database`; the password and the key come from the
        /// environment, as an operator's Secret provides them.
        static func instance(
            cluster: PostgresCluster, database: String, backend: EchoBackend, authService: String, grace: Int = 2,
            authTimeout: Int = 10_000,
            adjust: (inout JSONObject) -> Void = { _ in }
        ) async throws -> SharedInstance {
            var document = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1)
            document["admin"] = ["host": "127.0.0.1", "port": 0]
            document["eventLoopThreads"] = 2
            document["identityHeaders"] = ["X-User-Subject": "claims.sub"]
            document["logging"] = ["level": "info", "accessLog": false]
            document["authService"] = [
                "url": .string(authService), "timeoutMilliseconds": .number(JSONNumber(authTimeout)),
                "refresh": ["graceSeconds": .number(JSONNumber(grace)), "maxExpiredSeconds": 3600],
            ]
            document["sharedState"] = [
                "postgres": [
                    "url": .string(cluster.gatewayURL(database: database)), "tls": "disable",
                    "timeoutMilliseconds": 10_000,
                ],
                "encryptionKeyBase64": "${AUTH_GATEWAY_STATE_KEY}",
            ]
            adjust(&document)
            let process = try RunningGateway(
                configuration: document,
                environment: cluster.environment.merging(["AUTH_GATEWAY_STATE_KEY": Self.stateKey]) { $1 }
            )
            let instance = SharedInstance(
                process: process, port: try await process.waitForPort(),
                adminPort: try await process.waitForAdminPort(), document: document)
            try await instance.waitUntilShared()
            return instance
        }

        static func pair(
            _ rainmaker: RotatingRainMaker, subject: String = "alice"
        ) -> (expired: String, refresh: String, headers: [(String, String)]) {
            let expired = TestKeys.token(subject: subject, expiresIn: -60)
            let refresh = rainmaker.issueRefreshToken()
            return (expired, refresh, [("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", refresh)])
        }

        // MARK: Lifecycle

        /// The shared state is a service of `serve`'s service group: SIGTERM drains the gateway,
        /// ends the shared state's work before the event loops stop, then the group, with 0.
        @Test func sigtermEndsAServeProcessWithSharedStateCleanly() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start()
            let backend = try await EchoBackend.start(group: TestGroup.shared)
            atTestEnd {
                await rainmaker.service.stop(); await backend.close()
            }
            let instance = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: rainmaker.service.baseURL)
            defer { instance.stop() }
            let (_, _, headers) = Self.pair(rainmaker)
            #expect(try await instance.send(TestRequest(.GET, "/r", headers: headers)).status == 200)
            #expect(try await cluster.rowCount(database) == 1, "the refresh went through the database")
            instance.process.signal(SIGTERM)
            let output = { instance.process.output }
            #expect(try await instance.process.waitForExit(timeout: .seconds(30)) == 0, "\(output())")
            #expect(!output().contains("serviceFinishedUnexpectedly"), "\(output())")
            #expect(!output().contains("Cannot schedule tasks on an EventLoop"), "\(output())")
        }

        // MARK: One refresh for the fleet

        @Test func fortyConcurrentRequestsOverTwoInstancesMakeOneRefreshCall() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start(delayMilliseconds: 300)
            let backend = try await EchoBackend.start(group: TestGroup.shared)
            atTestEnd {
                await rainmaker.service.stop(); await backend.close()
            }
            // The processes' clocks are real, so the grace period is one that cannot be missed:
            // 120 s, four times the longest wait of this test (a 5 s one needed the 40 requests
            // and the late ones to land within it on a loaded machine). What happens after a
            // grace period is seen with a second pair, after a reload to 1 s.
            let a = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: rainmaker.service.baseURL,
                grace: 120)
            defer { a.stop() }
            let b = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: rainmaker.service.baseURL,
                grace: 120)
            defer { b.stop() }

            let (expired, refreshToken, headers) = Self.pair(rainmaker)
            let responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for index in 0..<40 {
                    let instance = index % 2 == 0 ? a : b
                    group.addTask { try await instance.send(TestRequest(.GET, "/r/\(index)", headers: headers)) }
                }
                return try await group.reduce(into: [TestResponse]()) { $0.append($1) }
            }
            #expect(responses.map(\.status) == Array(repeating: 200, count: 40))
            #expect(rainmaker.refreshCalls == 1)
            let accessTokens = Set(responses.compactMap { $0.header("x-access-token") })
            let refreshTokens = Set(responses.compactMap { $0.header("x-refresh-token") })
            #expect(accessTokens.count == 1 && refreshTokens.count == 1, "one new pair for everybody")
            let newToken = try #require(accessTokens.first)
            #expect(newToken != expired && refreshTokens.first != refreshToken)
            #expect(responses.allSatisfy { $0.echoedHeader("authorization") == ["Bearer \(newToken)"] })

            // A late old pair on either instance within graceSeconds: the stored outcome, no call.
            for instance in [a, b] {
                let late = try await instance.send(TestRequest(.GET, "/late", headers: headers))
                #expect(late.status == 200)
                #expect(late.header("x-access-token") == newToken)
            }
            #expect(rainmaker.refreshCalls == 1)
            let metrics = try await a.metrics() + b.metrics()
            #expect(metrics.contains("auth_gateway_refreshes_total{outcome=\"refreshed\"} 1\n"))

            // After graceSeconds the old refresh token is redeemed again, and the rotating
            // service refuses its reuse. Both instances reload to a 1 s grace (a reload keeps
            // the shared state; the new grace applies to outcomes stored from then on), and a
            // second pair is refreshed on A.
            for instance in [a, b] {
                var changed = instance.document
                changed.set("authService.refresh.graceSeconds", 1)
                try instance.process.rewrite(changed)
                instance.process.signal(SIGHUP)
                try await SharedStateTesting.eventually("the reload happened") {
                    instance.process.output.contains("config.reloaded")
                }
            }
            let (_, _, second) = Self.pair(rainmaker, subject: "alice-2")
            let refreshed = try await a.send(TestRequest(.GET, "/second", headers: second))
            #expect(refreshed.status == 200)
            #expect(rainmaker.refreshCalls == 2)
            let secondToken = try #require(refreshed.header("x-access-token"))
            // Polls B with the old second pair: within the grace each answer is the stored
            // outcome (no call, the same new token); the first after it redeems the old
            // refresh token again and is refused. No sleep decides when the grace is over.
            var tooLate: TestResponse?
            try await SharedStateTesting.eventually("the old pair is redeemed again after the grace", seconds: 30) {
                let response = try await b.send(TestRequest(.GET, "/too-late", headers: second))
                guard response.status == 200 else {
                    tooLate = response
                    return true
                }
                #expect(response.header("x-access-token") == secondToken)
                #expect(rainmaker.refreshCalls == 2, "a call within the grace")
                return false
            }
            #expect(tooLate?.status == 401)
            #expect(tooLate?.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.refresh_rejected")
            #expect(rainmaker.refreshCalls == 3)
        }

        // MARK: Crashes

        @Test func whenTheClaimingInstanceIsKilledTheOtherCompletesWithinLeaseAndTimeout() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            // The first call hangs (the claimant dies while waiting); later calls answer at once.
            let calls = NIOLockedValueBox(0)
            let service = try await ScriptedAuthService.start { request, eventLoop in
                let index = calls.withLockedValue {
                    $0 += 1; return $0
                }
                let response = SimpleResponse.json(
                    .ok,
                    [
                        "accesstoken": .string(TestKeys.token(subject: "bob")),
                        "refreshtoken": .string("rt-after-\(index)"),
                    ])
                return index == 1
                    ? eventLoop.scheduleTask(in: .seconds(10)) { response }.futureResult
                    : eventLoop.makeSucceededFuture(response)
            }
            let backend = try await EchoBackend.start(group: TestGroup.shared)
            atTestEnd {
                await service.stop(); await backend.close()
            }
            // Lease: 5000 ms + 1 s. (B's own call must also finish within the 5 s: 1 s was too
            // short for a loaded machine.)
            let a = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: service.baseURL, authTimeout: 5000)
            defer { a.stop() }
            let b = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: service.baseURL, authTimeout: 5000)
            defer { b.stop() }

            let headers = [
                ("Authorization", "Bearer \(TestKeys.token(subject: "bob", expiresIn: -60))"),
                ("X-Refresh-Token", "rt-bob"),
            ]
            let claimant = Task { try? await a.send(TestRequest(.GET, "/a", headers: headers)) }
            defer { claimant.cancel() }
            try await SharedStateTesting.eventually("A calls the auth service") { service.calls("/v1/login") == 1 }
            let started = ContinuousClock.now
            let waiter = Task { try await b.send(TestRequest(.GET, "/b", headers: headers)) }
            try await SharedStateTesting.eventually("B waits for A's lease") {
                try await cluster.rowCount(database) == 1
            }
            a.process.signal(SIGKILL)
            let response = try await waiter.value
            let took = ContinuousClock.now - started
            #expect(response.status == 200)
            #expect(response.header("x-refresh-token") == "rt-after-2")
            #expect(service.calls("/v1/login") == 2, "B took over once A's lease ended")
            // The 200 with the second refresh token proves the take-over; the time, that it
            // came when the 6 s lease ended (+ a 5 s call at most), with room for a loaded machine.
            #expect(took < .seconds(30), "lease (6 s) + auth timeout (5 s): \(took)")
        }

        @Test func aDatabaseKilledMidTrafficFallsBackThenSharesAgainWithoutRestart() async throws {
            // A cluster of its own: this test stops the server.
            let cluster = try await PostgresCluster.start()
            defer { cluster.stop() }
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start(delayMilliseconds: 20)
            let backend = try await EchoBackend.start(group: TestGroup.shared)
            atTestEnd {
                await rainmaker.service.stop(); await backend.close()
            }
            let a = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: rainmaker.service.baseURL)
            defer { a.stop() }
            let b = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: rainmaker.service.baseURL)
            defer { b.stop() }

            // Traffic: one refresh after another, alternating instances, each with its own pair.
            let traffic = Task {
                var statuses: [Int] = []
                for index in 0..<60 {
                    let instance = index % 2 == 0 ? a : b
                    let (_, _, headers) = Self.pair(rainmaker, subject: "user\(index)")
                    statuses.append(
                        (try? await instance.send(TestRequest(.GET, "/t/\(index)", headers: headers)).status) ?? 0)
                    try? await Task.sleep(for: .milliseconds(25))
                }
                return statuses
            }
            try await SharedStateTesting.eventually("traffic flows") { rainmaker.refreshCalls >= 5 }
            try await cluster.kill()
            let statuses = await traffic.value
            #expect(
                statuses == Array(repeating: 200, count: 60), "no request failed because the database did: \(statuses)")

            for instance in [a, b] {
                let health = try await instance.health()
                #expect(health["status"] == "degraded")
                #expect(health["checks"]?["sharedState"]?["connection"] == "failing", "\(health)")
                #expect(health["checks"]?["sharedState"]?["fallback"] == "process-local refresh table")
                #expect(try await instance.metrics().contains("auth_gateway_shared_state_up 0\n"))
                #expect(try await instance.metrics().contains("auth_gateway_shared_state_errors_total{operation="))
            }
            // Without the database each instance still coalesces its own requests.
            let (_, _, during) = Self.pair(rainmaker, subject: "during")
            let before = rainmaker.refreshCalls
            async let one = a.send(TestRequest(.GET, "/d1", headers: during))
            async let two = a.send(TestRequest(.GET, "/d2", headers: during))
            #expect(try await [one, two].map(\.status) == [200, 200])
            #expect(rainmaker.refreshCalls == before + 1)

            try await cluster.startServer()
            try await a.waitUntilShared(seconds: 20)
            try await b.waitUntilShared(seconds: 20)
            #expect(try await a.metrics().contains("auth_gateway_shared_state_up 1\n"))
            // Shared again: one pair over both instances, one call.
            let (_, _, after) = Self.pair(rainmaker, subject: "after")
            let calls = rainmaker.refreshCalls
            let responses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<10 {
                    let instance = index % 2 == 0 ? a : b
                    group.addTask {
                        try await instance.send(TestRequest(.GET, "/after/\(index)", headers: after)).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(responses == Array(repeating: 200, count: 10))
            #expect(rainmaker.refreshCalls == calls + 1)
        }

        // MARK: What is stored

        @Test func theDatabaseHoldsNoTokenInClear() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start()
            let backend = try await EchoBackend.start(group: TestGroup.shared)
            atTestEnd {
                await rainmaker.service.stop(); await backend.close()
            }
            let a = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: rainmaker.service.baseURL,
                grace: 30)
            defer { a.stop() }

            let (expired, refreshToken, headers) = Self.pair(rainmaker)
            let refreshed = try await a.send(TestRequest(.GET, "/s", headers: headers))
            #expect(refreshed.status == 200)
            let rejected = try await a.send(
                TestRequest(
                    .GET, "/s",
                    headers: [("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", "rt-refused-one")]))
            #expect(rejected.status == 401)
            let secrets = [
                expired, refreshToken, "rt-refused-one",
                try #require(refreshed.header("x-access-token")), try #require(refreshed.header("x-refresh-token")),
            ]

            #expect(try await cluster.rowCount(database) == 2, "one row per refreshed token")
            let dump = try await cluster.dump(database: database)
            #expect(dump.contains("auth_gateway_refresh_outcomes"))
            for secret in secrets {
                // In clear, any long piece of it, or hex-encoded as a bytea would print it.
                let pieces = stride(from: 0, to: max(secret.count - 12, 1), by: 12).map {
                    String(secret.dropFirst($0).prefix(12))
                }
                for piece in pieces { #expect(!dump.contains(piece), "a piece of a token is readable in the database") }
                let hex = Data(secret.utf8).map { String(format: "%02x", $0) }.joined()
                #expect(!dump.contains(String(hex.prefix(24))))
            }
            // The key is SHA-256 of the old refresh token; only the digest is stored.
            let keys = try await cluster.psql(
                "SELECT encode(token_digest, 'hex') FROM auth_gateway_refresh_outcomes ORDER BY 1", database: database)
            #expect(
                Set(keys.split(separator: "\n").map(String.init))
                    == Set([TokenDigest(of: refreshToken[...]).hex, TokenDigest(of: "rt-refused-one"[...]).hex]))
        }

        // MARK: Reload

        @Test func aReloadKeepsTheSharedStateConnectionAndOutcomes() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start()
            let backend = try await EchoBackend.start(group: TestGroup.shared)
            atTestEnd {
                await rainmaker.service.stop(); await backend.close()
            }
            let a = try await Self.instance(
                cluster: cluster, database: database, backend: backend, authService: rainmaker.service.baseURL,
                grace: 30)
            defer { a.stop() }

            let (_, _, headers) = Self.pair(rainmaker)
            let first = try await a.send(TestRequest(.GET, "/before", headers: headers))
            #expect(first.status == 200)
            let listeners = try await cluster.listeningBackends(database)
            #expect(listeners.count == 1)

            // A new configuration: another route name, and a changed sharedState (kept until a
            // restart, and said so).
            var changed = a.document
            changed["routes"] = [["name": "renamed", "pathPrefix": "/", "backend": "api"]]
            changed.set("sharedState.postgres.timeoutMilliseconds", 1500)
            try a.process.rewrite(changed)
            a.process.signal(SIGHUP)
            try await SharedStateTesting.eventually("the reload happened") {
                a.process.output.contains("config.reloaded")
            }
            #expect(a.process.output.contains("sharedState changed; the running shared state"))
            #expect(!a.process.output.contains(PostgresCluster.gatewayPassword))

            #expect(try await cluster.listeningBackends(database) == listeners, "the same LISTEN connection")
            let late = try await a.send(TestRequest(.GET, "/after", headers: headers))
            #expect(late.status == 200)
            #expect(late.header("x-access-token") == first.header("x-access-token"))
            #expect(rainmaker.refreshCalls == 1)
            // The new configuration serves: its route name labels the request.
            #expect(
                try await a.metrics().split(separator: "\n").contains {
                    $0.hasPrefix("auth_gateway_requests_total{") && $0.contains("route=\"renamed\"")
                        && $0.hasSuffix(" 1")
                })
        }
    }
}

/// One `serve` process with its ports.
struct SharedInstance: Sendable {
    let process: RunningGateway
    let port: Int
    let adminPort: Int
    let document: JSONObject

    func send(_ request: TestRequest) async throws -> TestResponse {
        let connection = try await TestConnection.connect(port: self.port)
        return try await withCleanup({ await connection.close() }) { () async throws in
            return try await connection.send(request)
        }
    }

    func health() async throws -> JSONValue {
        try #require(try await TestConnection.connect(port: self.adminPort).send(.get("/healthz")).json)
    }

    func metrics() async throws -> String {
        try await TestConnection.connect(port: self.adminPort).send(.get("/metrics")).text
    }

    /// Until `checks.sharedState.status` is `ok`: refreshes go through the database.
    func waitUntilShared(seconds: Double = 10) async throws {
        try await SharedStateTesting.eventually("the instance uses the shared state", seconds: seconds) {
            (try? await self.health())?["checks"]?["sharedState"]?["status"] == "ok"
        }
    }

    func stop() {
        self.process.kill()
    }
}

extension PostgresCluster {
    func rowCount(_ database: String) async throws -> Int {
        Int(
            try await self.psql("SELECT count(*) FROM auth_gateway_refresh_outcomes", database: database)
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Process ids of the gateway's LISTEN connections to `database`.
    func listeningBackends(_ database: String) async throws -> [String] {
        try await self.psql(
            "SELECT pid FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'auth-gateway' AND query ILIKE 'LISTEN%' ORDER BY pid",
            database: "postgres"
        ).split(separator: "\n").map(String.init)
    }
}
