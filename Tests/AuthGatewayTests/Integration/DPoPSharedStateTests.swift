import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

extension PostgreSQLTests {
    /// DPoP across instances (docs/authentication.md): two gateway instances (in this process, each
    /// with its own event loops, caches and database pool) on one PostgreSQL database share the
    /// `jti` replay cache and the `DPoP-Nonce` key; with the database down each still serves and
    /// refuses replays it saw itself. Proofs come from Python joserfc.
    @Suite("DPoP across instances (PostgreSQL)", .serialized, .timeLimit(.minutes(2)), .awaitsCleanups)
    struct DPoPSharedStateTests {
        static let base = "https://api.example.com"

        /// An instance on `database`; both instances accept one public base URL, so that one
        /// proof is valid on either (as behind one load balancer).
        static func instance(
            _ cluster: PostgresCluster, _ database: String, nonce: Bool = false
        ) async throws -> GatewayFixture {
            let environment = cluster.environment.merging(["STATE_KEY": SharedStateTesting.keyBase64]) { $1 }
            let gateway = try await GatewayFixture.start(environment: environment) { config in
                config["identityHeaders"] = ["X-User-Jkt": "dpop.jkt"]
                config.set("tokens.dpop", ["publicBaseURL": .string(Self.base), "nonce": .bool(nonce)])
                config["sharedState"] = [
                    "postgres": [
                        "url": .string(cluster.gatewayURL(database: database)), "tls": "disable",
                        "timeoutMilliseconds": 10_000,
                    ],
                    "encryptionKeyBase64": "${STATE_KEY}",
                ]
            }
            atTestEnd { await gateway.stop() }
            let shared = try #require(gateway.application.shared.sharedState)
            try await SharedStateTesting.eventually("the instance shares DPoP proofs") { shared.dpopReplay.isInUse }
            return gateway
        }

        static func send(
            _ gateway: GatewayFixture, _ path: String, token: String, proof: String
        ) async throws -> TestResponse {
            try await gateway.send(
                TestRequest(.GET, path, headers: [("Authorization", "DPoP \(token)"), ("DPoP", proof)]))
        }

        static func proofRows(_ cluster: PostgresCluster, _ database: String) async throws -> Int {
            Int(
                try await cluster.psql("SELECT count(*) FROM auth_gateway_dpop_proofs", database: database)
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }

        @Test func aProofReplayedToAnotherInstanceIsRefusedAndNeverForwarded() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let a = try await Self.instance(cluster, database)
            let b = try await Self.instance(cluster, database)
            let key = try await DPoPTests.clientKey()
            let token = DPoPTests.boundToken(key)

            // A bearer request costs the database nothing.
            #expect(try await a.send(.get("/plain", token: TestKeys.token())).status == 200)
            #expect(try await Self.proofRows(cluster, database) == 0)

            let proof = try await DPoPTests.proof(key, url: Self.base + "/orders", token: token)
            let first = try await Self.send(a, "/orders", token: token, proof: proof)
            #expect(first.status == 200, "\(first.text)")
            #expect(try await Self.proofRows(cluster, database) == 1)

            let replay = try await Self.send(b, "/orders", token: token, proof: proof)
            #expect(replay.status == 401)
            #expect(DPoPTests.problem(replay).type == "urn:auth-gateway:problem:dpop.invalid_proof")
            #expect(DPoPTests.problem(replay).detail == "The DPoP proof failed its check: jti was used before")
            #expect(replay.header("www-authenticate")?.hasPrefix("DPoP error=\"invalid_dpop_proof\"") == true)
            #expect(b.backend.requestCount == 0, "a replay is never forwarded")
            // And back on the first instance: refused by its own cache, without a statement.
            #expect(try await Self.send(a, "/orders", token: token, proof: proof).status == 401)
            #expect(a.backend.requestCount == 2)

            // A new proof by the same key passes on the second instance.
            let fresh = try await DPoPTests.proof(key, url: Self.base + "/orders", token: token)
            #expect(try await Self.send(b, "/orders", token: token, proof: fresh).status == 200)
            #expect(try await Self.proofRows(cluster, database) == 2)
            for gateway in [a, b] {
                let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
                #expect(!metrics.contains("auth_gateway_shared_state_errors_total{operation=\"dpop_replay\"}"))
            }
        }

        @Test func withTheDatabaseDownRequestsAreServedAndReplaysOnOneInstanceStillRefused() async throws {
            // A cluster of its own: this test kills the server.
            let cluster = try await PostgresCluster.start()
            defer { cluster.stop() }
            let database = try await cluster.createDatabase()
            let a = try await Self.instance(cluster, database)
            let key = try await DPoPTests.clientKey()
            let token = DPoPTests.boundToken(key)
            try await cluster.kill()

            // Whether a request or the LISTEN loop meets the outage first, no request fails.
            for index in 0..<3 {
                let proof = try await DPoPTests.proof(key, url: Self.base + "/down/\(index)", token: token)
                let served = try await Self.send(a, "/down/\(index)", token: token, proof: proof)
                #expect(served.status == 200, "\(served.text)")
                let replay = try await Self.send(a, "/down/\(index)", token: token, proof: proof)
                #expect(replay.status == 401)
                #expect(DPoPTests.problem(replay).detail == "The DPoP proof failed its check: jti was used before")
            }
            #expect(a.backend.requestCount == 3)
            let health = try #require(try await TestConnection.connect(port: a.adminPort).send(.get("/healthz")).json)
            #expect(health["status"] == "degraded")
            #expect(health["checks"]?["sharedState"]?["connection"] == "failing", "\(health)")
            let metrics = try await TestConnection.connect(port: a.adminPort).send(.get("/metrics")).text
            #expect(metrics.contains("auth_gateway_shared_state_up 0\n"))
            #expect(metrics.contains("auth_gateway_shared_state_errors_total{operation="))
        }

        /// RFC 9449 §8 across instances: a nonce one instance issued is accepted by the other
        /// (the key is derived from the shared `encryptionKeyBase64`).
        @Test func aNonceIssuedByOneInstanceIsAcceptedByTheOther() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let a = try await Self.instance(cluster, database, nonce: true)
            let b = try await Self.instance(cluster, database, nonce: true)
            let key = try await DPoPTests.clientKey()
            let token = DPoPTests.boundToken(key)

            let withoutNonce = try await DPoPTests.proof(key, url: Self.base + "/n", token: token)
            let challenge = try await Self.send(a, "/n", token: token, proof: withoutNonce)
            #expect(challenge.status == 401)
            #expect(challenge.header("www-authenticate")?.hasPrefix("DPoP error=\"use_dpop_nonce\"") == true)
            let nonce = try #require(challenge.header("dpop-nonce"))
            let withNonce = try await DPoPTests.proof(
                key, url: Self.base + "/n", token: token, ["nonce": .string(nonce)])
            #expect(try await Self.send(b, "/n", token: token, proof: withNonce).status == 200)
            #expect(a.backend.requestCount == 0 && b.backend.requestCount == 1)
        }
    }
}
