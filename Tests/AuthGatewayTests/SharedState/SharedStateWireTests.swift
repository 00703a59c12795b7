import Foundation
import NIOConcurrencyHelpers
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

extension PostgreSQLTests {
    /// Shared state (docs/shared-state.md) on the wire, with in-process gateways sharing one
    /// throwaway PostgreSQL database: what a client sees when it waited as long as a lease, and
    /// what is stored, checked by an implementation independent of the gateway's (Python `cryptography`).
    @Suite("Shared state on the wire (PostgreSQL)", .serialized, .timeLimit(.minutes(2)), .awaitsCleanups)
    struct SharedStateWireTests {
        static let openOutcome = ProcessTests.packageRoot.appendingPathComponent(
            "Tests/AuthGatewayTests/Fixtures/sharedstate/open_outcome.py"
        ).path

        /// A gateway on `database`; the auth service's answers are `rainmaker`'s.
        static func gateway(
            cluster: PostgresCluster, database: String, rainmaker: RotatingRainMaker, grace: Int = 30
        ) async throws -> GatewayFixture {
            let gateway = try await GatewayFixture.start(
                environment: cluster.environment.merging(["STATE_KEY": SharedStateTesting.keyBase64]) { $1 }
            ) { config in
                config["eventLoopThreads"] = 1
                config["authService"] = [
                    "url": .string(rainmaker.service.baseURL), "timeoutMilliseconds": 20_000,
                    "refresh": ["graceSeconds": .number(JSONNumber(grace)), "maxExpiredSeconds": 3600],
                ]
                config["sharedState"] = [
                    "postgres": ["url": .string(cluster.gatewayURL(database: database)), "tls": "disable"],
                    "encryptionKeyBase64": "${STATE_KEY}",
                ]
            }
            atTestEnd { await gateway.stop() }
            try await SharedStateTesting.eventually("the shared state is in use", seconds: 20) {
                (try? await TestConnection.connect(port: gateway.adminPort).send(.get("/healthz")).json)?["checks"]?[
                    "sharedState"]?["status"] == "ok"
            }
            return gateway
        }

        /// A waiter that waited out a lease and then finds another instance already took the
        /// token over does not wait for a second lease: 503 with `Retry-After`, while the
        /// instance that took over is still calling the auth service. The lease it waited
        /// for is a crashed instance's row (a claimant that never settles, 3 s left), written
        /// with SQL, so the test knows exactly what both waiters wait for.
        @Test func aWaiterPastTheLeaseGets503WithRetryAfter() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start()
            atTestEnd { await rainmaker.service.stop() }
            let b = try await Self.gateway(cluster: cluster, database: database, rainmaker: rainmaker)
            let c = try await Self.gateway(cluster: cluster, database: database, rainmaker: rainmaker)

            let refreshToken = rainmaker.issueRefreshToken()
            let headers = [
                ("Authorization", "Bearer \(TestKeys.token(subject: "wanda", expiresIn: -60))"),
                ("X-Refresh-Token", refreshToken),
            ]
            // Taken before the crashed lease starts: it ends no earlier than 3 s from here.
            let started = ContinuousClock.now
            // The crashed claimant: the key is SHA-256 of the refresh token, computed by the
            // database (not by the gateway's code).
            try await cluster.psql(
                """
                INSERT INTO auth_gateway_refresh_outcomes (token_digest, claimant, sealed_outcome, expires_at)
                VALUES (sha256(convert_to('\(refreshToken)', 'UTF8')), '6f1c1f4e-0000-4000-8000-00000000dead', NULL, clock_timestamp() + interval '3 seconds')
                """,
                database: database
            )
            // Whoever takes over holds its auth-service call until the test lets it go.
            rainmaker.gate.hold()
            atTestEnd { rainmaker.gate.release() }
            let finished = NIOLockedValueBox<[TestResponse]>([])
            let onB = Task {
                let response = try await Self.send(TestRequest(.GET, "/b", headers: headers), to: b)
                finished.withLockedValue { $0.append(response) }
                return response
            }
            let onC = Task {
                let response = try await Self.send(TestRequest(.GET, "/c", headers: headers), to: c)
                finished.withLockedValue { $0.append(response) }
                return response
            }

            // One of them takes over when the crashed lease ends and calls the auth service…
            #expect(try await eventually { rainmaker.gate.heldCount == 1 }, "nobody took over the ended lease")
            // …the other gives up with 503 while that call is still held.
            #expect(try await eventually { !finished.withLockedValue { $0 }.isEmpty }, "neither request was answered")
            let first = try #require(finished.withLockedValue { $0.first })
            // The other request is still waiting for the held call: the 503 did not wait for it.
            #expect(finished.withLockedValue { $0.count } == 1)
            #expect(first.status == 503, "\(first.text)")
            let retryAfter = first.header("retry-after").flatMap { Int($0) }
            #expect(retryAfter.map { $0 >= 1 } == true, "Retry-After: \(first.header("retry-after") ?? "absent")")
            #expect(first.header("content-type") == "application/problem+json")
            // Not before the crashed lease ended, and not a second lease (20 s + 1 s) later.
            let waited = ContinuousClock.now - started
            #expect(waited >= .milliseconds(2900), "gave up before the lease ended: \(waited)")
            #expect(waited < .seconds(20), "waited for a second lease: \(waited)")

            // The instance that took over answers once its call returns.
            rainmaker.gate.release()
            let responses = [try await onB.value, try await onC.value]
            #expect(responses.map(\.status).sorted() == [200, 503])
            #expect(rainmaker.refreshCalls == 1)
        }

        /// The outcome row of a refresh, opened by Python `cryptography` with the configured key
        /// as the AES-256 key and the row's digest as the authenticated data: it holds exactly
        /// the new pair the client got, and its key is SHA-256 of the old refresh token.
        @Test func aSealedOutcomeOpensWithAnIndependentAESGCM() async throws {
            let python = try ExternalTool.require("python3", package: "python3")
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start()
            atTestEnd { await rainmaker.service.stop() }
            let gateway = try await Self.gateway(cluster: cluster, database: database, rainmaker: rainmaker)

            let refreshToken = rainmaker.issueRefreshToken()
            let headers = [
                ("Authorization", "Bearer \(TestKeys.token(subject: "olga", expiresIn: -60))"),
                ("X-Refresh-Token", refreshToken),
            ]
            let response = try await gateway.send(TestRequest(.GET, "/sealed", headers: headers))
            #expect(response.status == 200)
            let newAccess = try #require(response.header("x-access-token"))
            let newRefresh = try #require(response.header("x-refresh-token"))

            let rows = try await cluster.psql(
                "SELECT encode(token_digest, 'hex') || ' ' || encode(sealed_outcome, 'hex') FROM auth_gateway_refresh_outcomes WHERE sealed_outcome IS NOT NULL",
                database: database
            ).split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(rows.count == 1, "\(rows)")
            let row = try #require(rows.first)
            try #require(row.count == 2)
            let result = try await ExternalTool.run(
                python, [Self.openOutcome, SharedStateTesting.keyBase64, refreshToken, row[0], row[1]],
                timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            let opened = try #require(
                try? JSONValue(parsing: result.stdout), "open_outcome.py printed: \(result.stdout) \(result.stderr)")
            #expect(opened["digestMatches"]?.boolValue == true, "the row's key is not SHA-256 of the old refresh token")
            #expect(opened["error"] == JSONValue.null, "\(opened)")
            #expect(
                opened["openedUnderAnotherDigest"]?.boolValue == false, "the digest is not bound as authenticated data")
            #expect(opened["outcome"]?["o"]?.stringValue == "refreshed")
            #expect(opened["outcome"]?["a"]?.stringValue == newAccess)
            #expect(opened["outcome"]?["r"]?.stringValue == newRefresh)
        }

        /// One request on a fresh connection, waiting up to a minute for its answer (a held
        /// auth-service call lasts as long as the test holds it).
        static func send(_ request: TestRequest, to gateway: GatewayFixture) async throws -> TestResponse {
            let connection = try await gateway.connect()
            return try await withCleanup({ await connection.close() }) { () async throws in
                try await connection.send(request, timeout: .seconds(60))
            }
        }
    }
}
