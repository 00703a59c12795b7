import NIOCore

/// Introspection answers shared by every instance on the database (docs/authentication.md):
/// an instance consults its own cache (`TokenIntrospector`), then `auth_gateway_introspections`,
/// then the endpoint — one call per token per instance at most (the local single flight), and
/// none at all when another instance's answer is stored. Rows are keyed by SHA-256 of the
/// token and sealed as refresh outcomes are (`OutcomeSealer+Introspection`); an active answer
/// is kept until `exp` or `cacheSeconds`, an inactive one `negativeCacheSeconds`, failures
/// never.
///
/// Only a local leader (a miss) gets here, as a job of the shared-state service. Degrades like
/// the rest of the shared state: a failed read or store counts as `introspection` and the
/// leader calls the endpoint as if alone; a stored answer this instance's key cannot open
/// counts as `decrypt`.
final class PostgresIntrospections: SharedIntrospections {
    private let database: SharedStateDatabase
    private let jobs: SharedStateJobs
    private let tablesReady: TokenTablesReadiness
    private let sealer: OutcomeSealer

    init(
        database: SharedStateDatabase, jobs: SharedStateJobs, tablesReady: TokenTablesReadiness, sealer: OutcomeSealer
    ) {
        self.database = database
        self.jobs = jobs
        self.tablesReady = tablesReady
        self.sealer = sealer
    }

    var isInUse: Bool { self.tablesReady.isReady && self.database.usesDatabase }

    func resolve(
        _ digest: TokenDigest, clock: @escaping @Sendable () -> Double,
        call: @escaping @Sendable () -> EventLoopFuture<IntrospectionOutcome>,
        settle: @escaping @Sendable (_ outcome: IntrospectionOutcome, _ fromTable: Bool) -> Void
    ) -> Bool {
        guard self.isInUse else { return false }
        let job = SharedIntrospectionJob(digest: digest, clock: clock, call: call, settle: settle)
        return self.jobs.enqueue(.introspection(job), key: digest)
    }

    /// The job: the stored answer, else the call's, then stored for the other instances.
    func run(_ job: SharedIntrospectionJob) async {
        if let stored = await self.read(job.digest, clock: job.clock) {
            job.settle(stored, true)
            return
        }
        let outcome = (try? await job.call().get()) ?? .unavailable
        job.settle(outcome, false)
        await self.store(outcome, for: job.digest, clock: job.clock)
    }

    private func read(_ digest: TokenDigest, clock: @Sendable () -> Double) async -> IntrospectionOutcome? {
        guard let row = try? await self.database.readIntrospection(digest), row.remainingMilliseconds > 0 else {
            return nil
        }
        do throws(OutcomeSealer.OpenError) {
            return try self.sealer.openIntrospection(
                row.sealed, for: digest, validUntil: clock() + Double(row.remainingMilliseconds) / 1000)
        } catch {
            self.database.record(SharedStateFailure(operation: .decrypt, reason: error.description))
            return nil
        }
    }

    private func store(_ outcome: IntrospectionOutcome, for digest: TokenDigest, clock: @Sendable () -> Double) async {
        let validUntil: Double
        switch outcome {
        case .active(_, let until), .inactive(let until): validUntil = until
        case .unavailable: return
        }
        let keep = Int64((validUntil - clock()) * 1000)
        guard keep > 0, self.isInUse, !Task.isCancelled, let sealed = self.sealer.seal(outcome, for: digest) else {
            return
        }
        try? await self.database.storeIntrospection(digest, sealedOutcome: sealed, keepMilliseconds: keep)
    }
}

/// One local leader's introspection, queued for the shared-state service.
struct SharedIntrospectionJob: Sendable {
    let digest: TokenDigest
    let clock: @Sendable () -> Double
    /// Calls the endpoint on the request's loop.
    let call: @Sendable () -> EventLoopFuture<IntrospectionOutcome>
    /// Ends the local flight (`fromTable`: a stored answer, no call made).
    let settle: @Sendable (_ outcome: IntrospectionOutcome, _ fromTable: Bool) -> Void
}
