import NIOCore

/// The DPoP replay check shared by every instance on the database (docs/authentication.md):
/// behind the process's `ReplayCache` (a replay seen here never reaches the database), a
/// proof's first use is one `INSERT … ON CONFLICT` into `auth_gateway_dpop_proofs`; a conflict
/// with a live row is a replay, wherever the first use was. The statement runs as a job of the
/// shared-state service.
///
/// Degrades, never fails: while the database is out of use (starting, down, or its tables
/// not yet created) the local cache alone decides and the request pays nothing; a statement
/// that fails or times out counts as `dpop_replay` in the shared-state errors, turns the
/// database off until a probe succeeds, and lets that request through on the local check.
/// During an outage a proof replayed to another replica within its window passes there once,
/// as without `sharedState`.
final class PostgresDPoPReplay: SharedDPoPReplay {
    private let database: SharedStateDatabase
    private let jobs: SharedStateJobs
    private let tablesReady: TokenTablesReadiness

    init(database: SharedStateDatabase, jobs: SharedStateJobs, tablesReady: TokenTablesReadiness) {
        self.database = database
        self.jobs = jobs
        self.tablesReady = tablesReady
    }

    /// Whether a request asking now would go to the database.
    var isInUse: Bool { self.tablesReady.isReady && self.database.usesDatabase }

    func firstUse(_ digest: TokenDigest, keepSeconds: Double, on eventLoop: EventLoop) -> EventLoopFuture<Bool>? {
        guard self.isInUse else { return nil }
        let promise = eventLoop.makePromise(of: Bool.self)
        let keep = Int64(max(keepSeconds, 1) * 1000)
        if !self.jobs.enqueue(.recordDPoPProof(digest, keepMilliseconds: keep, firstUse: promise), key: digest) {
            // The shared-state service has stopped: the local check stands.
            promise.succeed(true)
        }
        return promise.futureResult
    }

    /// The job: records the proof; `firstUse` gets false for a replay.
    func record(_ digest: TokenDigest, keepMilliseconds: Int64, firstUse: EventLoopPromise<Bool>) async {
        do {
            firstUse.succeed(try await self.database.recordDPoPProof(digest, keepMilliseconds: keepMilliseconds))
        } catch {
            // Counted and logged by the database (unless shutting down); the local check stands.
            firstUse.succeed(true)
        }
    }
}
