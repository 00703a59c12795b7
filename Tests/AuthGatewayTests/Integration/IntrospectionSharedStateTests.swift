import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

extension PostgreSQLTests {
    /// Introspection answers across instances (docs/authentication.md): two gateway instances (in
    /// this process, each with its own caches and database pool) on one PostgreSQL database make
    /// one endpoint call per token between them; the database holds the answers sealed, keyed by
    /// SHA-256 of the token, and no token in clear.
    @Suite("Introspection across instances (PostgreSQL)", .serialized, .timeLimit(.minutes(2)), .awaitsCleanups)
    struct IntrospectionSharedStateTests {
        static func instance(
            _ cluster: PostgresCluster, _ database: String, endpoint: ScriptedIntrospection
        ) async throws -> GatewayFixture {
            let environment = cluster.environment.merging(["STATE_KEY": SharedStateTesting.keyBase64]) { $1 }
            let gateway = try await GatewayFixture.start(environment: environment) { config in
                config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
                config.set(
                    "tokens.introspection",
                    [
                        "url": .string(endpoint.service.baseURL + "/oauth2/introspect"), "clientId": "gateway",
                        "clientSecret": "introspection-secret",
                        "cacheSeconds": 60, "negativeCacheSeconds": 30, "timeoutMilliseconds": 10000,
                        "issuer": "https://idp.test",
                    ]
                )
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
            try await SharedStateTesting.eventually("the instance shares introspection answers") {
                shared.introspections.isInUse
            }
            return gateway
        }

        static let opener = ProcessTests.packageRoot.appendingPathComponent(
            "Tests/AuthGatewayTests/Fixtures/shared_state/open_sealed_rows.py"
        ).path

        /// The plaintexts of `rows` (`digest|sealed`, hex), opened by Python `cryptography`.
        static func openWithPython(_ rows: String) async throws -> [String] {
            let python = try ExternalTool.require("python3", package: "python3")
            let key = SharedStateTesting.key.bytes.map { String(format: "%02x", $0) }.joined()
            let result = try await ExternalTool.run(python, [Self.opener, key], input: Data(rows.utf8))
            if result.stderr.contains("No module named 'cryptography'") {
                Issue.record("Python cryptography is not installed")
            }
            return result.stdout.split(separator: "\n").map(String.init)
        }

        static func rows(_ cluster: PostgresCluster, _ database: String) async throws -> Int {
            Int(
                try await cluster.psql("SELECT count(*) FROM auth_gateway_introspections", database: database)
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }

        @Test func oneEndpointCallPerTokenAcrossTwoInstancesAndNoTokenInTheDatabase() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let endpoint = try await ScriptedIntrospection.start()
            atTestEnd { await endpoint.service.stop() }
            let a = try await Self.instance(cluster, database, endpoint: endpoint)
            let b = try await Self.instance(cluster, database, endpoint: endpoint)
            let token = "opaque-shared-\(UUID().uuidString)"
            let revoked = "opaque-revoked-\(UUID().uuidString)"
            let exp = Int(Date().timeIntervalSince1970) + 3600
            endpoint.set(
                token,
                ["active": true, "sub": "dave-the-subject", "iss": "https://idp.test", "exp": .number(JSONNumber(exp))])
            endpoint.set(revoked, ["active": false])

            let first = try await a.send(.get("/x", token: token))
            #expect(first.status == 200)
            #expect(endpoint.calls == 1)
            // The answer is stored after the request is answered (off its path).
            try await SharedStateTesting.eventually("the answer is stored") {
                try await Self.rows(cluster, database) == 1
            }
            let second = try await b.send(.get("/x", token: token))
            #expect(second.status == 200)
            #expect(second.echoedHeader("x-user-subject") == ["dave-the-subject"])
            #expect(endpoint.calls == 1, "the other instance read the stored answer")
            let metrics = try await TestConnection.connect(port: b.adminPort).send(.get("/metrics")).text
            #expect(metrics.contains("auth_gateway_introspections_total{outcome=\"shared\"} 1\n"), "\(metrics)")

            // Inactive answers are shared too (for negativeCacheSeconds).
            #expect(try await b.send(.get("/y", token: revoked)).status == 401)
            #expect(endpoint.calls == 2)
            try await SharedStateTesting.eventually("the inactive answer is stored") {
                try await Self.rows(cluster, database) == 2
            }
            let refused = try await a.send(.get("/y", token: revoked))
            #expect(refused.status == 401)
            #expect(refused.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.inactive")
            #expect(endpoint.calls == 2)
            #expect(a.backend.requestCount == 1 && b.backend.requestCount == 1)

            // Keys are SHA-256 of the tokens; everything else is ciphertext. An active row
            // lives until `exp` at most (here cacheSeconds: 60), an inactive one 30 s.
            let keys = try await cluster.psql(
                "SELECT encode(token_digest, 'hex') FROM auth_gateway_introspections ORDER BY 1", database: database)
            #expect(
                Set(keys.split(separator: "\n").map(String.init))
                    == Set([TokenDigest(of: token[...]).hex, TokenDigest(of: revoked[...]).hex]))
            let lifetimes = try await cluster.psql(
                "SELECT extract(epoch FROM expires_at - clock_timestamp())::int FROM auth_gateway_introspections ORDER BY 1",
                database: database
            ).split(separator: "\n").compactMap { Int($0) }
            #expect(
                lifetimes.count == 2 && lifetimes[0] <= 30 && lifetimes[1] <= 60 && lifetimes[1] > 30, "\(lifetimes)")
            // An independent implementation (Python cryptography) opens the rows with the key and
            // the row's digest as authenticated data, as docs/shared-state.md documents.
            let rows = try await cluster.psql(
                "SELECT encode(token_digest, 'hex') || '|' || encode(sealed_outcome, 'hex') FROM auth_gateway_introspections ORDER BY 1",
                database: database
            )
            let opened = try await Self.openWithPython(rows)
            let expected = [TokenDigest(of: token[...]).hex: "active", TokenDigest(of: revoked[...]).hex: "inactive"]
            let digests = rows.split(separator: "\n").map { String($0.prefix(64)) }
            #expect(opened.count == 2, "\(opened)")
            for (digest, plaintext) in zip(digests, opened) {
                let document = try JSONValue(parsing: plaintext)
                #expect(document["o"]?.stringValue == expected[digest])
                if expected[digest] == "active" { #expect(document["c"]?["sub"]?.stringValue == "dave-the-subject") }
            }
            let dump = try await cluster.dump(database: database)
            #expect(dump.contains("auth_gateway_introspections"))
            for secret in [token, revoked, "dave-the-subject"] {
                let pieces = stride(from: 0, to: max(secret.count - 12, 1), by: 12).map {
                    String(secret.dropFirst($0).prefix(12))
                }
                for piece in pieces {
                    #expect(!dump.contains(piece), "a piece of \(secret.prefix(6))… is readable in the database")
                }
                let hex = Data(secret.utf8).map { String(format: "%02x", $0) }.joined()
                #expect(!dump.contains(String(hex.prefix(24))))
            }
        }
    }
}
