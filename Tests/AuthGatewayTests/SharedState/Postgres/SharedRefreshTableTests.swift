import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// The shared table's statements against a real PostgreSQL (docs/shared-state.md): the contract
    /// the flight logic relies on.
    @Suite("SharedRefreshTable (PostgreSQL)", .timeLimit(.minutes(1)), .awaitsCleanups)
    struct SharedRefreshTableTests {
        static let digest = TokenDigest(of: "rt-table-test"[...])

        func database() async throws -> (PostgresSharedState, PostgresCluster, String) {
            let cluster = try await PostgresCluster.shared()
            let name = try await cluster.createDatabase()
            let state = try await SharedStateTesting.start(
                try SharedStateTesting.configuration(cluster: cluster, database: name))
            return (state, cluster, name)
        }

        @Test func exactlyOneOfManyConcurrentClaimsWins() async throws {
            let (state, _, _) = try await self.database()
            atTestEnd { await state.stop() }
            let claimants = (0..<20).map { _ in UUID() }
            let rows = try await withThrowingTaskGroup(of: (UUID, SharedRefreshRow?).self) { group in
                for claimant in claimants {
                    group.addTask {
                        (
                            claimant,
                            try await state.database.claim(Self.digest, claimant: claimant, leaseMilliseconds: 5000)
                        )
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let winners = rows.filter { $0.0 == $0.1?.claimant }
            #expect(winners.count == 1)
            let winner = try #require(winners.first?.0)
            // Every other claim saw the winner's lease, or no row yet (its snapshot predates it).
            #expect(rows.allSatisfy { $0.1 == nil || ($0.1?.claimant == winner && $0.1?.sealedOutcome == nil) })
            #expect(
                rows.compactMap(\.1).allSatisfy { $0.remainingMilliseconds > 4000 && $0.remainingMilliseconds <= 5000 })
        }

        @Test func aSettledOutcomeIsReturnedUntilItExpiresThenClaimableAgain() async throws {
            let (state, _, _) = try await self.database()
            atTestEnd { await state.stop() }
            let first = UUID()
            #expect(
                try await state.database.claim(Self.digest, claimant: first, leaseMilliseconds: 5000)?.claimant == first
            )
            // Kept 3 s: ample for the next statement on a loaded machine.
            let settled = ContinuousClock.now
            #expect(
                try await state.database.settle(
                    Self.digest, claimant: first, sealedOutcome: [1, 9], keepMilliseconds: 3000))
            let seen = try #require(
                try await state.database.claim(Self.digest, claimant: UUID(), leaseMilliseconds: 5000))
            #expect(seen.claimant == first)
            #expect(seen.sealedOutcome == [1, 9])
            #expect(seen.remainingMilliseconds > 0 && seen.remainingMilliseconds <= 3000)
            // Claimable again once the outcome expires (polled: each claim before then still
            // returns the stored outcome), and not before.
            let next = UUID()
            var claimed: SharedRefreshRow?
            try await SharedStateTesting.eventually("the outcome expires") {
                claimed = try await state.database.claim(Self.digest, claimant: next, leaseMilliseconds: 5000)
                if let claimed, claimed.claimant != next {
                    #expect(claimed.claimant == first && claimed.sealedOutcome == [1, 9], "\(claimed)")
                }
                return claimed?.claimant == next
            }
            #expect(ContinuousClock.now - settled >= .milliseconds(2990), "claimable before the outcome expired")
            #expect(claimed?.sealedOutcome == nil)
        }

        @Test func anEndedLeaseIsTakenOverAndTheFirstOutcomeStoredWins() async throws {
            let (state, _, _) = try await self.database()
            atTestEnd { await state.stop() }
            let crashed = UUID()
            let takeover = UUID()
            // A 2 s lease: ample for the next statement on a loaded machine.
            let claimed = ContinuousClock.now
            #expect(
                try await state.database.claim(Self.digest, claimant: crashed, leaseMilliseconds: 2000)?.claimant
                    == crashed)
            #expect(
                try await state.database.claim(Self.digest, claimant: takeover, leaseMilliseconds: 5000)?.claimant
                    == crashed, "lease running")
            // Taken over once the lease has ended (polled: each claim before then still sees
            // the running lease), and not before.
            try await SharedStateTesting.eventually("the lease is taken over") {
                try await state.database.claim(Self.digest, claimant: takeover, leaseMilliseconds: 5000)?.claimant
                    == takeover
            }
            #expect(ContinuousClock.now - claimed >= .milliseconds(1990), "taken over before the lease ended")
            #expect(
                try await state.database.settle(
                    Self.digest, claimant: takeover, sealedOutcome: [1, 1], keepMilliseconds: 5000))
            // The first claimant was only slow: its late outcome does not replace the stored one.
            #expect(
                try await state.database.settle(
                    Self.digest, claimant: crashed, sealedOutcome: [1, 2], keepMilliseconds: 5000) == false)
            #expect(try await state.database.read(Self.digest)?.sealedOutcome == [1, 1])
        }

        @Test func anUnavailableOutcomeReachesReadersButIsClaimableAtOnce() async throws {
            let (state, _, _) = try await self.database()
            atTestEnd { await state.stop() }
            let leader = UUID()
            _ = try await state.database.claim(Self.digest, claimant: leader, leaseMilliseconds: 5000)
            #expect(
                try await state.database.settle(
                    Self.digest, claimant: leader, sealedOutcome: [1, 0], keepMilliseconds: 0))
            #expect(try await state.database.read(Self.digest)?.sealedOutcome == [1, 0])
            let next = UUID()
            #expect(
                try await state.database.claim(Self.digest, claimant: next, leaseMilliseconds: 5000)?.claimant == next)
        }

        @Test func theSweepDeletesOnlyExpiredRows() async throws {
            let (state, cluster, name) = try await self.database()
            atTestEnd { await state.stop() }
            let expired = TokenDigest(of: "rt-expired"[...])
            let fresh = TokenDigest(of: "rt-fresh"[...])
            let claimants = (expired: UUID(), fresh: UUID())
            #expect(
                try await state.database.claim(expired, claimant: claimants.expired, leaseMilliseconds: 1)?.claimant
                    == claimants.expired)
            #expect(
                try await state.database.claim(fresh, claimant: claimants.fresh, leaseMilliseconds: 60000)?.claimant
                    == claimants.fresh)
            let before = try await cluster.psql("SELECT count(*) FROM auth_gateway_refresh_outcomes", database: name)
            #expect(before.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
            // The 1 ms lease has ended by the time the sweep runs (it compares with the
            // database's clock, which moved on while the statements above ran).
            try await Task.sleep(for: .milliseconds(20))
            try await state.database.sweep()
            let keys = try await cluster.psql(
                "SELECT encode(token_digest, 'hex') FROM auth_gateway_refresh_outcomes", database: name)
            #expect(keys.split(separator: "\n").map(String.init) == [fresh.hex])
        }

        @Test func theTableIsKeyedBySHA256OfTheRefreshToken() async throws {
            let (state, cluster, name) = try await self.database()
            atTestEnd { await state.stop() }
            _ = try await state.database.claim(TokenDigest(of: "abc"[...]), claimant: UUID(), leaseMilliseconds: 1000)
            let stored = try await cluster.psql(
                "SELECT encode(token_digest, 'hex') = encode(sha256('abc'), 'hex') FROM auth_gateway_refresh_outcomes",
                database: name)
            #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == "t")
        }

        /// The privileges docs/shared-state.md lists: without `CREATE` on the schema the gateway
        /// cannot make its table (and says why); with the table made by another role and DML granted, it works.
        @Test func aRoleWithoutCreateWorksOnATableMadeForIt() async throws {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase(owner: PostgresCluster.superuser)
            let configuration = try SharedStateTesting.configuration(cluster: cluster, database: database)
            let refused = try await SharedStateTesting.start(configuration, waitUntilUp: false)
            try await SharedStateTesting.eventually("the table could not be created") {
                refused.health.detail["lastError"]?.stringValue
                    == "schema: permission denied for schema public (SQLSTATE 42501)"
            }
            await refused.stop()

            try await cluster.psql(
                """
                CREATE TABLE auth_gateway_refresh_outcomes (token_digest bytea PRIMARY KEY, claimant uuid NOT NULL, sealed_outcome bytea, expires_at timestamptz NOT NULL);
                CREATE INDEX auth_gateway_refresh_outcomes_expires_at ON auth_gateway_refresh_outcomes (expires_at);
                GRANT SELECT, INSERT, UPDATE, DELETE ON auth_gateway_refresh_outcomes TO \(PostgresCluster.gatewayRole);
                """,
                database: database
            )
            let metrics = ProcessMetrics()
            let state = try await SharedStateTesting.start(configuration, metrics: metrics)
            atTestEnd { await state.stop() }
            let call = CountingCall(answer: .rejected)
            #expect(try await state.refresh(Self.digest, on: TestGroup.shared.any(), call: call) == (.rejected, .led))
            #expect(try await cluster.rowCount(database) == 1)
            // The DPoP-proof and introspection tables cannot be made by this role: counted,
            // shown, and those stay per process — refreshes are shared all the same.
            try await SharedStateTesting.eventually("the token tables were tried") {
                metrics.sharedStateErrors(.tokenTables) >= 1
            }
            #expect(state.health.detail["tokenTables"] == "missing")
            #expect(state.database.usesDatabase)
            #expect(!state.dpopReplay.isInUse && !state.introspections.isInUse)
        }
    }
}
