import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// Two shared states on one database stand for two gateway instances, in this process: the
    /// store's single flight, grace, fallback and takeover against a real PostgreSQL.
    @Suite("PostgresRefreshStore (PostgreSQL)", .timeLimit(.minutes(1)), .awaitsCleanups)
    struct PostgresRefreshStoreTests {
        static let refreshed = RefreshOutcome.refreshed(accessToken: "eyJ.new-access", refreshToken: "rt-new")

        func twoInstances(timeoutMilliseconds: Int = 10_000) async throws -> (PostgresSharedState, PostgresSharedState)
        {
            let cluster = try await PostgresCluster.shared()
            let configuration = try SharedStateTesting.configuration(
                cluster: cluster, database: try await cluster.createDatabase(), timeoutMilliseconds: timeoutMilliseconds
            )
            return (
                try await SharedStateTesting.start(configuration), try await SharedStateTesting.start(configuration)
            )
        }

        @Test func concurrentRefreshesOnTwoInstancesMakeOneCallAndShareItsOutcome() async throws {
            let (a, b) = try await self.twoInstances()
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let digest = TokenDigest(of: "rt-concurrent"[...])
            let call = CountingCall(answer: Self.refreshed, delay: .milliseconds(200))
            let results = try await withThrowingTaskGroup(of: (RefreshOutcome, SingleFlightRole).self) { group in
                for index in 0..<20 {
                    let instance = index % 2 == 0 ? a : b
                    group.addTask { try await instance.refresh(digest, on: TestGroup.shared.any(), call: call) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(call.calls == 1)
            #expect(results.allSatisfy { $0.0 == Self.refreshed })
            #expect(results.filter { $0.1 == .led }.count == 1)
            // A late request on either instance: remembered, no call.
            #expect(
                try await b.refresh(digest, on: TestGroup.shared.any(), call: call) == (Self.refreshed, .remembered))
            #expect(
                try await a.refresh(digest, on: TestGroup.shared.any(), call: call) == (Self.refreshed, .remembered))
            #expect(call.calls == 1)
        }

        @Test func aWaiterIsWokenByTheNotificationNotByItsPoll() async throws {
            let cluster = try await PostgresCluster.shared()
            let configuration = try SharedStateTesting.configuration(
                cluster: cluster, database: try await cluster.createDatabase())
            // The safety-net poll is 60 s here: only the NOTIFY can wake the waiter in time.
            let a = try await SharedStateTesting.start(configuration, pollMillisecondsWhileListening: 60_000)
            let b = try await SharedStateTesting.start(configuration, pollMillisecondsWhileListening: 60_000)
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let digest = TokenDigest(of: "rt-notified"[...])
            // A's call takes 800 ms under a 61 s lease (60 s timeout + 1 s).
            let call = CountingCall(answer: Self.refreshed, delay: .milliseconds(800))
            async let led = a.refresh(digest, callTimeoutMilliseconds: 60_000, on: TestGroup.shared.any(), call: call)
            try await SharedStateTesting.eventually("A calls") { call.calls == 1 }
            let started = ContinuousClock.now
            #expect(
                try await b.refresh(digest, callTimeoutMilliseconds: 60_000, on: TestGroup.shared.any(), call: call)
                    == (Self.refreshed, .joined))
            // Without it, B would read again only when the poll (60 s) or the lease (61 s) ends:
            // the bound leaves ~40 s for a loaded machine.
            #expect(
                ContinuousClock.now - started < .seconds(40),
                "woken by the notification, not by the lease's end or the 60 s poll")
            #expect(try await led == (Self.refreshed, .led))
            #expect(call.calls == 1)
        }

        @Test func anOutcomeStoredByOneInstanceIsAnsweredByAnotherWithoutACall() async throws {
            let (a, b) = try await self.twoInstances()
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let digest = TokenDigest(of: "rt-rejected"[...])
            let call = CountingCall(answer: .rejected)
            #expect(try await a.refresh(digest, on: TestGroup.shared.any(), call: call) == (.rejected, .led))
            #expect(try await b.refresh(digest, on: TestGroup.shared.any(), call: call) == (.rejected, .remembered))
            #expect(call.calls == 1)
        }

        @Test func unavailableReachesTheFlightsWaitersButIsNotRemembered() async throws {
            let (a, b) = try await self.twoInstances()
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let digest = TokenDigest(of: "rt-unavailable"[...])
            let slow = CountingCall(answer: .unavailable, delay: .milliseconds(800))
            async let led = a.refresh(digest, on: TestGroup.shared.any(), call: slow)
            try await SharedStateTesting.eventually("A calls") { slow.calls == 1 }
            let joined = try await b.refresh(digest, on: TestGroup.shared.any(), call: slow)
            #expect(joined == (.unavailable, .joined))
            #expect(try await led == (.unavailable, .led))
            // The next request claims again at once.
            let again = CountingCall(answer: Self.refreshed)
            #expect(try await b.refresh(digest, on: TestGroup.shared.any(), call: again) == (Self.refreshed, .led))
            #expect(again.calls == 1)
        }

        @Test func anAbandonedLeaseIsTakenOverWhenItEnds() async throws {
            let (a, b) = try await self.twoInstances()
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let digest = TokenDigest(of: "rt-abandoned"[...])
            // An instance claimed and died before settling: its 1 s lease blocks the token.
            // Taken before the claim: the lease (the database's clock) ends no earlier than 1 s
            // after this, however late this task resumes on a loaded machine.
            let claimed = ContinuousClock.now
            _ = try await a.database.claim(digest, claimant: UUID(), leaseMilliseconds: 1000)
            let call = CountingCall(answer: Self.refreshed)
            #expect(
                try await b.refresh(digest, callTimeoutMilliseconds: 1000, on: TestGroup.shared.any(), call: call) == (
                    Self.refreshed, .led
                ))
            let waited = ContinuousClock.now - claimed
            #expect(call.calls == 1)
            #expect(waited >= .milliseconds(990), "took over before the lease ended: \(waited)")
            // `.led` proves the take-over (a waiter that gives up answers `.unavailable`); the
            // bound, that it came when the lease ended (plus at most one 250 ms poll and a
            // statement or two), with seconds of margin for a loaded machine.
            #expect(waited < .seconds(10), "waited past the lease: \(waited)")
        }

        @Test func anUnreachableDatabaseFallsBackToTheLocalTableAtOnce() async throws {
            let cluster = try await PostgresCluster.shared()
            // Reserved for the test, so that nothing can start listening on it meanwhile.
            let nobodyListens = try RefusingPort()
            defer { withExtendedLifetime(nobodyListens) {} }
            let logs = LogCapture()
            let state = try await SharedStateTesting.start(
                try SharedStateTesting.configuration(
                    cluster: cluster, database: "unused", port: nobodyListens.port, password: "s3cret-pw",
                    timeoutMilliseconds: 60_000
                ), logs: logs,
                waitUntilUp: false
            )
            atTestEnd { await state.stop() }
            try await SharedStateTesting.eventually("the connection failed") {
                state.database.availabilitySnapshot.lastFailure != nil
            }
            let digest = TokenDigest(of: "rt-local"[...])
            // The failure is recorded; refreshes no longer try the database until a probe
            // succeeds (none can: nothing listens).
            #expect(!state.database.usesDatabase)
            let call = CountingCall(answer: Self.refreshed, delay: .milliseconds(100))
            let started = ContinuousClock.now
            async let first = state.refresh(digest, on: TestGroup.shared.any(), call: call)
            async let second = state.refresh(digest, on: TestGroup.shared.any(), call: call)
            let results = try await [first, second]
            // Waiting for the database would take its 60 s timeout (the configuration's):
            // tens of seconds of margin for a loaded machine either way.
            #expect(ContinuousClock.now - started < .seconds(30), "waited for the database")
            #expect(call.calls == 1, "the local single flight still holds")
            #expect(results.map(\.0) == [Self.refreshed, Self.refreshed])
            #expect(
                try await state.refresh(digest, on: TestGroup.shared.any(), call: call) == (Self.refreshed, .remembered)
            )
            let health = state.health
            #expect(health.degraded)
            // Never reached since the start: "failing" (with the error), not "starting".
            #expect(health.detail["connection"] == "failing")
            let lastError = try #require(health.detail["lastError"]?.stringValue)
            #expect(lastError.contains("Connection refused") || lastError.contains("no answer within"), "\(lastError)")
            #expect(!logs.text.contains("s3cret-pw"))
            #expect(!JSONValue.object(health.detail).jsonText.contains("s3cret-pw"))
        }

        @Test func aDatabaseSlowerThanTheTimeoutFallsBackForThatRequest() async throws {
            let cluster = try await PostgresCluster.shared()
            let name = try await cluster.createDatabase()
            let configuration = try SharedStateTesting.configuration(
                cluster: cluster, database: name, timeoutMilliseconds: 4000)
            let metrics = ProcessMetrics()
            let state = try await SharedStateTesting.start(configuration, metrics: metrics)
            atTestEnd { await state.stop() }
            // Another session holds the table locked (every claim waits) and the advisory lock
            // the probe's schema check takes (so no probe can put the database back in use
            // while the table is locked), until the test ends it.
            let marker = "locker_\(UUID().uuidString.prefix(8).lowercased())"
            let locker = Task.detached {
                try await cluster.psql(
                    "BEGIN; LOCK TABLE auth_gateway_refresh_outcomes IN ACCESS EXCLUSIVE MODE; SELECT pg_advisory_xact_lock(7245017781536447317); SELECT pg_sleep(50) AS \(marker); COMMIT;",
                    database: name
                )
            }
            func endTheLocker() async throws {
                try await cluster.psql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(50) AS \(marker)%' AND pid <> pg_backend_pid()",
                    database: name
                )
                _ = await locker.result
            }
            do {
                try await SharedStateTesting.eventually("the locks are held") {
                    try await cluster.psql(
                        """
                        SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                        WHERE a.query LIKE '%pg_sleep(50) AS \(marker)%' AND l.granted AND (l.locktype = 'advisory'
                            OR (l.locktype = 'relation' AND l.relation = 'auth_gateway_refresh_outcomes'::regclass AND l.mode = 'AccessExclusiveLock'))
                        """,
                        database: name
                    ).trimmingCharacters(in: .whitespacesAndNewlines) == "2"
                }
                let call = CountingCall(answer: Self.refreshed)
                let started = ContinuousClock.now
                #expect(
                    try await state.refresh(TokenDigest(of: "rt-slow"[...]), on: TestGroup.shared.any(), call: call)
                        == (Self.refreshed, .led))
                let took = ContinuousClock.now - started
                // Cut off at the 4 s timeout, not when the lock goes (50 s).
                #expect(took >= .milliseconds(3950) && took < .seconds(25), "\(took)")
                #expect(metrics.sharedStateErrors(.claim) == 1)
                let failure = try #require(state.database.availabilitySnapshot.lastFailure)
                // The claim's failure, or a later probe's (its schema check waits for the
                // advisory lock: 4 s and more after the claim's).
                #expect(failure.reason == "no answer within 4000 ms")
                #expect(failure.operation == .claim || failure.operation == .schema, "\(failure)")
                // Until a probe succeeds (none can while the locks are held), refreshes do not
                // wait for the database at all: no claim (so no claim failure) and an answer
                // well within the timeout.
                #expect(!state.database.usesDatabase)
                // (A claim would wait for the lock and fail at the 4 s timeout: a second claim
                // error. No time bound: a loaded machine can take 4 s without waiting for it.)
                #expect(
                    try await state.refresh(TokenDigest(of: "rt-slow-2"[...]), on: TestGroup.shared.any(), call: call).1
                        == .led)
                #expect(metrics.sharedStateErrors(.claim) == 1, "the second refresh tried the database")
                #expect(call.calls == 2)
            } catch {
                try? await endTheLocker()
                throw error
            }
            try await endTheLocker()
            try await SharedStateTesting.eventually("the database is used again") { state.database.usesDatabase }
        }
    }
}
