import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// `sharedState.postgres.tls` against a server whose certificate a test CA signed for
    /// `localhost` and 127.0.0.1 (made with openssl by the cluster harness); the server also
    /// listens on 127.0.0.2, a name its certificate does not carry.
    @Suite("Shared state over TLS (PostgreSQL)", .timeLimit(.minutes(1)), .awaitsCleanups)
    struct SharedStateTLSTests {
        /// Whether every connection of the gateway to `database` is encrypted (nil: none open).
        func encrypted(_ cluster: PostgresCluster, _ database: String) async throws -> Bool? {
            let rows = try await cluster.psql(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = '\(database)' AND a.application_name = 'auth-gateway'",
                database: "postgres"
            ).split(separator: "\n")
            guard !rows.isEmpty else { return nil }
            return rows.allSatisfy { $0 == "t" }
        }

        @Test(arguments: [
            (PostgresTLSMode.require, "127.0.0.1", false),
            (.verifyFull, "localhost", true),
            (.verifyFull, "127.0.0.1", true),
        ])
        func connectsEncrypted(_ mode: PostgresTLSMode, host: String, withCA: Bool) async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let state = try await SharedStateTesting.start(
                try SharedStateTesting.configuration(
                    cluster: cluster, database: database, host: host, tls: mode,
                    caFile: withCA ? cluster.caCertificate.path : nil)
            )
            atTestEnd { await state.stop() }
            let call = CountingCall(answer: .rejected)
            #expect(
                try await state.refresh(TokenDigest(of: "rt-tls"[...]), on: TestGroup.shared.any(), call: call) == (
                    .rejected, .led
                ))
            #expect(try await cluster.rowCount(database) == 1, "the outcome went through the database")
            #expect(try await self.encrypted(cluster, database) == true)
        }

        @Test func disableConnectsInPlainText() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let state = try await SharedStateTesting.start(
                try SharedStateTesting.configuration(cluster: cluster, database: database, tls: .disable))
            atTestEnd { await state.stop() }
            #expect(try await self.encrypted(cluster, database) == false)
        }

        @Test(arguments: [
            // A CA that did not sign the server's certificate.
            ("127.0.0.1", true),
            // The right CA, but a host the certificate does not name.
            ("127.0.0.2", false),
        ])
        func verifyFullRefusesAServerItCannotVerify(host: String, otherCA: Bool) async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let ca = otherCA ? cluster.otherCACertificate : cluster.caCertificate
            let state = try await SharedStateTesting.start(
                try SharedStateTesting.configuration(
                    cluster: cluster, database: database, host: host, tls: .verifyFull, caFile: ca.path),
                waitUntilUp: false
            )
            atTestEnd { await state.stop() }
            try await SharedStateTesting.eventually("the certificate was refused") {
                state.health.detail["lastError"]?.stringValue?.lowercased().contains("certificate") == true
            }
            #expect(!state.database.usesDatabase)
            #expect(try await self.encrypted(cluster, database) == nil, "no connection of the gateway was let in")
            // Refreshes still work, through the local table.
            let call = CountingCall(answer: .rejected)
            #expect(
                try await state.refresh(TokenDigest(of: "rt-unverified"[...]), on: TestGroup.shared.any(), call: call)
                    == (.rejected, .led))
        }

        @Test func aWrongPasswordIsReportedWithoutThePassword() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let logs = LogCapture()
            let state = try await SharedStateTesting.start(
                try SharedStateTesting.configuration(
                    cluster: cluster, database: database, password: "not-the-password-42"), logs: logs,
                waitUntilUp: false
            )
            atTestEnd { await state.stop() }
            try await SharedStateTesting.eventually("authentication failed") {
                state.health.detail["lastError"]?.stringValue?.contains(
                    "password authentication failed for user \"gateway\"") == true
            }
            #expect(state.health.degraded)
            #expect(!logs.text.contains("not-the-password-42"))
            #expect(logs.text.contains("shared_state.unavailable"))
            #expect(!JSONValue.object(state.health.detail).jsonText.contains("not-the-password-42"))
        }
    }
}
