import NIOCore
import Synchronization

/// The DPoP replay check shared by every instance on the database (SPEC §4.14): behind the
/// process's `DPoPReplayCache` (a replay seen here never reaches the database), a proof's
/// first use is one `INSERT … ON CONFLICT` into `auth_gateway_dpop_proofs`; a conflict with
/// a live row is a replay, wherever the first use was.
///
/// Degrades, never fails: while the database is out of use (starting, down, or its tables
/// not yet created) the local cache alone decides and the request pays nothing; a statement
/// that fails or times out counts as `dpop_replay` in the shared-state errors, turns the
/// database off until a probe succeeds, and lets that request through on the local check.
/// During an outage a proof replayed to another replica within its window passes there once,
/// as without `sharedState`.
final class SharedDPoPReplay: Sendable {
    private let database: SharedStateDatabase
    private let tasks: SharedStateTasks
    private let tablesReady: TokenTablesReadiness

    init(database: SharedStateDatabase, tasks: SharedStateTasks, tablesReady: TokenTablesReadiness) {
        self.database = database
        self.tasks = tasks
        self.tablesReady = tablesReady
    }

    /// Whether a request asking now would go to the database.
    var isInUse: Bool { self.tablesReady.isReady && self.database.usesDatabase }

    /// nil when the database is not in use (the local check stands); else a future on
    /// `eventLoop`: true for the proof's first use (or a failed statement), false for a replay.
    /// `keepSeconds`: how long the proof could still be accepted anywhere.
    func firstUse(_ digest: TokenDigest, keepSeconds: Double, on eventLoop: EventLoop) -> EventLoopFuture<Bool>? {
        guard self.isInUse else { return nil }
        let promise = eventLoop.makePromise(of: Bool.self)
        let database = self.database
        let keep = Int64(max(keepSeconds, 1) * 1000)
        let started = self.tasks.start {
            do {
                promise.succeed(try await database.recordDPoPProof(digest, keepMilliseconds: keep))
            } catch {
                // Counted and logged by the database (unless shutting down); the local check stands.
                promise.succeed(true)
            }
        }
        guard started else {
            promise.succeed(true)
            return promise.futureResult
        }
        return promise.futureResult
    }
}

/// Whether the token tables (`SharedTokenTables`) exist: set by the maintenance loop once it
/// created them, cleared when the database fails (a database restored empty needs them again).
/// One atomic load per DPoP request or introspection miss.
final class TokenTablesReadiness: Sendable {
    private let ready = Atomic<Bool>(false)

    var isReady: Bool { self.ready.load(ordering: .relaxed) }

    func set(_ value: Bool) { self.ready.store(value, ordering: .relaxed) }
}
