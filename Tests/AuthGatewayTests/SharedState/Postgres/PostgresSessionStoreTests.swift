import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// `PostgresSessionStore` against a real PostgreSQL, two shared states on one database
    /// standing for two instances (docs/browser-sign-in.md, "Where sessions live").
    @Suite("PostgresSessionStore (PostgreSQL)", .serialized, .timeLimit(.minutes(2)), .awaitsCleanups)
    struct PostgresSessionStoreTests {
        static let lifetime = SessionLifetime(idleSeconds: 100, maxSeconds: 10_000)

        /// Two instances on one database, their sessions table made, sharing `clock`.
        static func instances(
            _ cluster: PostgresCluster, clock: TestClock
        ) async throws -> (PostgresSharedState, PostgresSharedState, String) {
            let database = try await cluster.createDatabase()
            let configuration = try SharedStateTesting.configuration(cluster: cluster, database: database)
            let a = try await SharedStateTesting.start(configuration, clock: clock.function)
            let b = try await SharedStateTesting.start(configuration, clock: clock.function)
            for state in [a, b] {
                state.sessions.lifetime = Self.lifetime
                try await SharedStateTesting.eventually("the sessions table exists") { state.sessions.isInUse }
            }
            return (a, b, database)
        }

        /// Stands still unless a test moves it (a lookup compares records exactly), at the
        /// real time (the sweep judges rows by the database's clock).
        static func clock() -> TestClock { TestClock(fixed: Date().timeIntervalSince1970.rounded(.down)) }

        static func record(
            subject: String = "alice", sid: String? = "sid-alice", access: String = "access-1", at now: Double
        ) -> SessionRecord {
            // Whole seconds: the sealed record keeps milliseconds.
            let now = now.rounded(.down)
            return SessionRecord(
                subject: subject, providerSessionID: sid, idToken: "id-token-of-\(subject)", accessToken: access,
                refreshToken: "refresh-of-\(subject)", createdAt: now, lastUsedAt: now)
        }

        enum Looked: Equatable {
            case found(SessionRecord)
            /// Answered after a database read.
            case read(SessionRecord?)
            case missing
            case expired
        }

        /// A request's lookup on one of the group's loops.
        static func look(
            _ store: PostgresSessionStore, _ digest: TokenDigest, now: Double
        ) async throws -> Looked {
            let loop = TestGroup.shared.any()
            let lookup = try await loop.submit { store.lookup(digest, now: now, lifetime: Self.lifetime, on: loop) }
                .get()
            switch lookup {
            case .found(let record): return .found(record)
            case .missing: return .missing
            case .expired: return .expired
            case .pending(let record): return .read(try await record.get())
            }
        }

        static func rows(
            _ cluster: PostgresCluster, _ database: String, where condition: String = "true"
        ) async throws
            -> Int
        {
            Int(
                try await cluster.psql(
                    "SELECT count(*) FROM auth_gateway_sessions WHERE \(condition)", database: database
                )
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }

        /// How soon another instance must follow a `NOTIFY`: within a second on an idle machine
        /// (docs/shared-state.md), 5 s on a loaded 2-core one. Without the notification the copy
        /// would live until its idle timeout, minutes away, so 5 s still tells the two apart.
        static let notified = 5.0

        /// Polls until `condition`, at most `seconds`; returns how long it took.
        static func within(
            _ seconds: Double, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
            _ condition: () -> Bool
        ) async throws -> Duration {
            let start = ContinuousClock.now
            try await SharedStateTesting.eventually(what, seconds: seconds + 5, sourceLocation: sourceLocation) {
                condition()
            }
            let took = ContinuousClock.now - start
            #expect(took <= .milliseconds(Int(seconds * 1000)), "\(what) took \(took)", sourceLocation: sourceLocation)
            return took
        }

        @Test func aSessionMadeOnOneInstanceIsReadOnceByAnotherThenServedFromMemory() async throws {
            let cluster = try await PostgresCluster.shared()
            let clock = Self.clock()
            let (a, b, database) = try await Self.instances(cluster, clock: clock)
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let digest = SessionHandle.generate().digest
            let record = Self.record(at: clock.now)
            a.sessions.create(digest, record)
            try await SharedStateTesting.eventually("the sign-in is written") {
                try await Self.rows(cluster, database) == 1
            }
            #expect(try await Self.look(a.sessions, digest, now: clock.now) == .found(record), "A holds its own")
            #expect(try await Self.look(b.sessions, digest, now: clock.now) == .read(record))
            #expect(b.sessions.databaseReads.load(ordering: .relaxed) == 1)
            for _ in 0..<5 {
                #expect(try await Self.look(b.sessions, digest, now: clock.now) == .found(record))
            }
            #expect(b.sessions.databaseReads.load(ordering: .relaxed) == 1, "a known session costs no statement")

            // Twenty requests at once with a handle B does not know: one read.
            let other = SessionHandle.generate().digest
            let second = Self.record(subject: "bob", sid: nil, at: clock.now)
            a.sessions.create(other, second)
            try await SharedStateTesting.eventually("the second sign-in is written") {
                try await Self.rows(cluster, database) == 2
            }
            let answers = try await withThrowingTaskGroup(of: Looked.self) { group in
                for _ in 0..<20 { group.addTask { try await Self.look(b.sessions, other, now: clock.now) } }
                return try await group.reduce(into: [Looked]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0 == .read(second) || $0 == .found(second) }, "\(answers)")
            #expect(b.sessions.databaseReads.load(ordering: .relaxed) == 2, "single flight per digest")
            // An unknown handle is unknown after its one read.
            #expect(try await Self.look(b.sessions, SessionHandle.generate().digest, now: clock.now) == .read(nil))
        }

        @Test func nothingOfASessionIsStoredInClear() async throws {
            let cluster = try await PostgresCluster.shared()
            let clock = Self.clock()
            let (a, b, database) = try await Self.instances(cluster, clock: clock)
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let handle = SessionHandle.generate()
            let record = Self.record(subject: "carol-subject", sid: "carol-sid", access: "carol-access", at: clock.now)
            a.sessions.create(handle.digest, record)
            try await SharedStateTesting.eventually("the sign-in is written") {
                try await Self.rows(cluster, database) == 1
            }
            let dump = try await cluster.dump(database: database)
            #expect(dump.contains("auth_gateway_sessions"))
            for secret in ["carol-subject", "carol-sid", "carol-access", "id-token-of", "refresh-of", handle.value] {
                #expect(!dump.contains(secret), "\(secret) is in the database")
            }
            let sealer = SessionSealer(key: SharedStateTesting.key)
            let stored = try await cluster.psql(
                "SELECT encode(handle_digest, 'hex'), encode(sid_hash, 'hex'), encode(sub_hash, 'hex') FROM auth_gateway_sessions",
                database: database
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
            #expect(
                stored
                    == "\(handle.digest.hex)|\(hex(sealer.providerSessionHash("carol-sid")))|\(hex(sealer.subjectHash("carol-subject")))"
            )
        }

        @Test func endsAndUpdatesReachTheOtherInstanceByNotification() async throws {
            let cluster = try await PostgresCluster.shared()
            let clock = Self.clock()
            let (a, b, database) = try await Self.instances(cluster, clock: clock)
            atTestEnd {
                await a.stop(); await b.stop()
            }
            // Four sessions both instances hold: alice twice (two provider sessions), bob, carol.
            let sessions: [(TokenDigest, SessionRecord)] = [
                (SessionHandle.generate().digest, Self.record(subject: "alice", sid: "s-1", at: clock.now)),
                (SessionHandle.generate().digest, Self.record(subject: "alice", sid: "s-2", at: clock.now)),
                (SessionHandle.generate().digest, Self.record(subject: "bob", sid: "s-3", at: clock.now)),
                (SessionHandle.generate().digest, Self.record(subject: "carol", sid: nil, at: clock.now)),
            ]
            for (digest, record) in sessions { a.sessions.create(digest, record) }
            try await SharedStateTesting.eventually("the sign-ins are written") {
                try await Self.rows(cluster, database) == 4
            }
            for (digest, record) in sessions {
                #expect(try await Self.look(b.sessions, digest, now: clock.now) == .read(record))
            }

            // A refresh on A: B reads the new tokens into its copy (never dropping it: a request
            // on B may be adopting the same refresh).
            var refreshed = sessions[3].1
            refreshed.accessToken = "access-2"
            a.sessions.update(sessions[3].0, refreshed)
            _ = try await Self.within(Self.notified, "B holds the new tokens") {
                b.sessions.held(sessions[3].0)?.accessToken == "access-2"
            }
            #expect(try await Self.look(b.sessions, sessions[3].0, now: clock.now) == .found(refreshed))

            // A sign-out on A.
            a.sessions.end(sessions[2].0, reason: .signOut)
            _ = try await Self.within(Self.notified, "B drops the signed-out session") {
                b.sessions.held(sessions[2].0) == nil
            }
            #expect(try await Self.look(b.sessions, sessions[2].0, now: clock.now) == .read(nil))

            // Back-channel logout on B by sid: only that provider session's session, on A too.
            #expect(b.sessions.end(providerSessionID: "s-1", subject: "alice", reason: .backchannel) == 1)
            _ = try await Self.within(Self.notified, "A drops the sid's session") {
                a.sessions.held(sessions[0].0) == nil
            }
            #expect(a.sessions.held(sessions[1].0) != nil)
            // …and by sub: every session of the subject.
            #expect(a.sessions.end(providerSessionID: nil, subject: "alice", reason: .backchannel) == 1)
            _ = try await Self.within(Self.notified, "B drops the subject's sessions") {
                b.sessions.held(sessions[1].0) == nil
            }
            try await SharedStateTesting.eventually("only carol's row is left") {
                try await Self.rows(cluster, database) == 1
            }
            #expect(b.sessions.held(sessions[3].0) != nil)
        }

        @Test func aCopyThatLooksIdleIsReadAgainBeforeTheSessionEnds() async throws {
            let cluster = try await PostgresCluster.shared()
            let clock = Self.clock()
            let (a, b, database) = try await Self.instances(cluster, clock: clock)
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let digest = SessionHandle.generate().digest
            let record = Self.record(at: clock.now)
            a.sessions.create(digest, record)
            try await SharedStateTesting.eventually("the sign-in is written") {
                try await Self.rows(cluster, database) == 1
            }
            #expect(try await Self.look(b.sessions, digest, now: clock.now) == .read(record))
            // Used on A only: B's copy does not know (uses are written, not notified).
            clock.advance(by: 60)
            guard case .found = try await Self.look(a.sessions, digest, now: clock.now) else {
                Issue.record("A serves it")
                return
            }
            let used = Int(clock.now)
            try await SharedStateTesting.eventually("the use is written") {
                try await Self.rows(cluster, database, where: "extract(epoch FROM last_used_at) >= \(used)") == 1
            }
            clock.advance(by: 60)
            // B's copy is 120 s idle (> 100), but the row says 60: alive, read again.
            guard case .read(let alive?) = try await Self.look(b.sessions, digest, now: clock.now) else {
                Issue.record("B reads the row before ending the session")
                return
            }
            #expect(alive.accessToken == record.accessToken)
            #expect(b.sessions.databaseReads.load(ordering: .relaxed) == 2)
            // Idle for everybody: over, and the row goes.
            clock.advance(by: 200)
            #expect(try await Self.look(b.sessions, digest, now: clock.now) == .read(nil))
            try await SharedStateTesting.eventually("the expired row is deleted") {
                try await Self.rows(cluster, database) == 0
            }
            _ = try await Self.within(Self.notified, "A drops it too") { a.sessions.held(digest) == nil }
        }

        @Test func rowsPastTheirExpiryAreSwept() async throws {
            let cluster = try await PostgresCluster.shared()
            let clock = Self.clock()
            let (a, b, database) = try await Self.instances(cluster, clock: clock)
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let old = Self.record(at: clock.now - 5000)
            let fresh = Self.record(subject: "bob", at: clock.now)
            a.sessions.create(SessionHandle.generate().digest, old)
            a.sessions.create(SessionHandle.generate().digest, fresh)
            try await SharedStateTesting.eventually("the sign-ins are written") {
                try await Self.rows(cluster, database) == 2
            }
            try await a.database.sweepSessions()
            #expect(try await Self.rows(cluster, database) == 1)
        }

        @Test func withTheDatabaseDownKnownSessionsWorkAndNewOnesAreWrittenWhenItIsBack() async throws {
            // A cluster of its own: this test kills the server.
            let cluster = try await PostgresCluster.start()
            defer { cluster.stop() }
            let clock = Self.clock()
            let (a, b, database) = try await Self.instances(cluster, clock: clock)
            atTestEnd {
                await a.stop(); await b.stop()
            }
            let known = SessionHandle.generate().digest
            let record = Self.record(at: clock.now)
            a.sessions.create(known, record)
            try await SharedStateTesting.eventually("the sign-in is written") {
                try await Self.rows(cluster, database) == 1
            }
            #expect(try await Self.look(b.sessions, known, now: clock.now) == .read(record))

            try await cluster.kill()
            try await SharedStateTesting.eventually("both notice the outage") {
                !a.sessions.isInUse && !b.sessions.isInUse
            }
            for store in [a.sessions, b.sessions] {
                #expect(try await Self.look(store, known, now: clock.now) == .found(record))
            }
            // A sign-in during the outage is kept by A; B does not know it (and does not wait).
            let during = SessionHandle.generate().digest
            let signedIn = Self.record(subject: "bob", at: clock.now)
            a.sessions.create(during, signedIn)
            #expect(try await Self.look(a.sessions, during, now: clock.now) == .found(signedIn))
            #expect(try await Self.look(b.sessions, during, now: clock.now) == .missing)

            try await cluster.startServer()
            try await SharedStateTesting.eventually("both use the database again") {
                a.sessions.isInUse && b.sessions.isInUse
            }
            try await SharedStateTesting.eventually("the outage's sign-in is written") {
                try await Self.rows(cluster, database) == 2
            }
            #expect(try await Self.look(b.sessions, during, now: clock.now) == .read(signedIn))
        }
    }
}
