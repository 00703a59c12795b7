import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

extension PostgreSQLTests {
    /// The shared state as `GatewayApplication` owns it (what `serve`, the demo and the
    /// in-process fixture all build): started with the application, used by its requests,
    /// reported by `/healthz`, and gone — connections included — after `shutdown()`.
    @Suite("Shared state in the application (PostgreSQL)", .timeLimit(.minutes(1)), .awaitsCleanups)
    struct SharedStateApplicationTests {
        func gatewayConnections(_ cluster: PostgresCluster, _ database: String) async throws -> Int {
            Int(
                try await cluster.psql(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'auth-gateway'",
                    database: "postgres"
                ).trimmingCharacters(in: .whitespacesAndNewlines)
            ) ?? -1
        }

        @Test func theApplicationStartsUsesReportsAndStopsItsSharedState() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let rainmaker = try await RotatingRainMaker.start()
            atTestEnd { await rainmaker.service.stop() }
            let gateway = try await GatewayFixture.start(
                environment: cluster.environment.merging(["STATE_KEY": SharedStateTesting.keyBase64]) { $1 }
            ) { config in
                config["authService"] = ["url": .string(rainmaker.service.baseURL), "refresh": ["graceSeconds": 30]]
                config["sharedState"] = [
                    "postgres": ["url": .string(cluster.gatewayURL(database: database)), "tls": "require"],
                    "encryptionKeyBase64": "${STATE_KEY}",
                ]
            }
            let health = { try await TestConnection.connect(port: gateway.adminPort).send(.get("/healthz")).json }
            try await SharedStateTesting.eventually("the shared state is in use") {
                try await health()?["checks"]?["sharedState"]?["status"] == "ok"
            }
            #expect(try await health()?["status"] == "ok")
            let shared = try #require(gateway.application.shared.sharedState)
            #expect(gateway.application.shared.authentication.refreshStore as? PostgresRefreshStore === shared.store)
            #expect(gateway.application.shared.authentication.sessions as? PostgresSessionStore === shared.sessions)
            try await SharedStateTesting.eventually("the sessions table is made") {
                try await health()?["checks"]?["sharedState"]?["sessionTable"] == "ok"
            }

            let headers = [
                ("Authorization", "Bearer \(TestKeys.token(expiresIn: -60))"),
                ("X-Refresh-Token", rainmaker.issueRefreshToken()),
            ]
            #expect(try await gateway.send(TestRequest(.GET, "/x", headers: headers)).status == 200)
            #expect(try await cluster.rowCount(database) == 1, "the refresh went through the database")
            #expect(try await self.gatewayConnections(cluster, database) >= 2, "the pool and the LISTEN connection")

            await gateway.stop()
            try await SharedStateTesting.eventually("the connections are closed") {
                try await self.gatewayConnections(cluster, database) == 0
            }
            #expect(!shared.wakeups.isListening)
        }
    }
}
