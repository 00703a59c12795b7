import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// The DPoP-proof and introspection tables against a real PostgreSQL (docs/authentication.md):
    /// created by the maintenance loop, a proof's first use wins exactly once, rows expire,
    /// answers are stored sealed and read back with their remaining time.
    @Suite("SharedTokenTables (PostgreSQL)", .timeLimit(.minutes(1)), .awaitsCleanups)
    struct SharedTokenTablesTests {
        static let proof = ReplayCache.digest(
            of: DPoPVerifiedProof(thumbprint: "jkt-test", jti: "jti-1", issuedAt: 0))

        func database() async throws -> (PostgresSharedState, PostgresCluster, String) {
            let cluster = try await PostgresCluster.shared()
            let name = try await cluster.createDatabase()
            let state = try await SharedStateTesting.start(
                try SharedStateTesting.configuration(cluster: cluster, database: name))
            try await SharedStateTesting.eventually("the token tables exist") { state.tokenTables.isReady }
            return (state, cluster, name)
        }

        @Test func ofManyConcurrentRecordsOfOneProofExactlyOneIsTheFirstUse() async throws {
            let (state, cluster, name) = try await self.database()
            atTestEnd { await state.stop() }
            let firsts = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await state.database.recordDPoPProof(Self.proof, keepMilliseconds: 60_000) }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(firsts.filter { $0 }.count == 1)
            // 16 bytes of the digest: the row holds nothing else of the proof.
            let stored = try await cluster.psql(
                "SELECT encode(proof_digest, 'hex') FROM auth_gateway_dpop_proofs", database: name)
            #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == String(Self.proof.hex.prefix(32)))
        }

        @Test func aProofIsFirstUsedAgainOnlyOnceItsRowExpiredAndExpiredRowsAreSwept() async throws {
            let (state, cluster, name) = try await self.database()
            atTestEnd { await state.stop() }
            #expect(try await state.database.recordDPoPProof(Self.proof, keepMilliseconds: 1500))
            #expect(try await !state.database.recordDPoPProof(Self.proof, keepMilliseconds: 1500))
            try await SharedStateTesting.eventually("the row expires") {
                try await state.database.recordDPoPProof(Self.proof, keepMilliseconds: 500)
            }
            try await SharedStateTesting.eventually("the row expires again") {
                try await cluster.psql(
                    "SELECT count(*) FROM auth_gateway_dpop_proofs WHERE expires_at < clock_timestamp()", database: name
                )
                .trimmingCharacters(in: .whitespacesAndNewlines) == "1"
            }
            try await state.database.sweepTokenTables()
            #expect(
                try await cluster.psql("SELECT count(*) FROM auth_gateway_dpop_proofs", database: name)
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        }

        @Test func anAnswerIsStoredSealedAndReadWithItsRemainingTime() async throws {
            let (state, cluster, name) = try await self.database()
            atTestEnd { await state.stop() }
            let digest = TokenDigest(of: "opaque-token-in-clear"[...])
            #expect(try await state.database.readIntrospection(digest) == nil)
            let sealer = OutcomeSealer(key: SharedStateTesting.key)
            let sealed = try #require(sealer.seal(.active(claims: ["sub": "carol"], validUntil: 0), for: digest))
            try await state.database.storeIntrospection(digest, sealedOutcome: sealed, keepMilliseconds: 30_000)
            let row = try #require(try await state.database.readIntrospection(digest))
            #expect(row.sealed == sealed)
            #expect(row.remainingMilliseconds > 20_000 && row.remainingMilliseconds <= 30_000)
            #expect(
                try sealer.openIntrospection(row.sealed, for: digest, validUntil: 1)
                    == .active(claims: ["sub": "carol"], validUntil: 1))
            // A second store replaces the first (another instance's later answer).
            let inactive = try #require(sealer.seal(.inactive(validUntil: 0), for: digest))
            try await state.database.storeIntrospection(digest, sealedOutcome: inactive, keepMilliseconds: 30_000)
            #expect(try await state.database.readIntrospection(digest)?.sealed == inactive)
            let dump = try await cluster.dump(database: name)
            #expect(dump.contains("auth_gateway_introspections"))
            #expect(!dump.contains("opaque-token") && !dump.contains("carol"))
        }

        /// The maintenance loop makes the tables, and says so in `/healthz`'s detail.
        @Test func theTablesAreReportedInTheHealthDetail() async throws {
            let (state, _, _) = try await self.database()
            atTestEnd { await state.stop() }
            #expect(state.health.detail["tokenTables"] == "ok")
            #expect(state.dpopReplay.isInUse && state.introspections.isInUse)
        }
    }
}
