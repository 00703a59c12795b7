import NIOCore

/// Introspection answers shared by every instance on the database (SPEC §4.13): an instance
/// consults its own cache (`TokenIntrospector`), then `auth_gateway_introspections`, then the
/// endpoint — one call per token per instance at most (the local single flight), and none at
/// all when another instance's answer is stored. Rows are keyed by SHA-256 of the token and
/// sealed as refresh outcomes are (`OutcomeSealer+Introspection`); an active answer is kept
/// until `exp` or `cacheSeconds`, an inactive one `negativeCacheSeconds`, failures never.
///
/// Only a local leader (a miss) gets here, in a task of its own. Degrades like the rest of the
/// shared state: a failed read or store counts as `introspection` and the leader calls the
/// endpoint as if alone; a stored answer this instance's key cannot open counts as `decrypt`.
final class SharedIntrospections: Sendable {
    private let database: SharedStateDatabase
    private let tasks: SharedStateTasks
    private let tablesReady: TokenTablesReadiness
    private let sealer: OutcomeSealer

    init(
        database: SharedStateDatabase, tasks: SharedStateTasks, tablesReady: TokenTablesReadiness, sealer: OutcomeSealer
    ) {
        self.database = database
        self.tasks = tasks
        self.tablesReady = tablesReady
        self.sealer = sealer
    }

    var isInUse: Bool { self.tablesReady.isReady && self.database.usesDatabase }

    /// Resolves `digest` through the shared table and, on a miss, `call` (which the caller
    /// runs on its loop), then stores a definite answer for the other instances. `settle`
    /// receives the answer (`fromTable`: read from the table, no call made). False, with
    /// nothing started, when the database is not in use: the caller calls the endpoint itself.
    func resolve(
        _ digest: TokenDigest, clock: @escaping @Sendable () -> Double,
        call: @escaping @Sendable () -> EventLoopFuture<IntrospectionOutcome>,
        settle: @escaping @Sendable (_ outcome: IntrospectionOutcome, _ fromTable: Bool) -> Void
    ) -> Bool {
        guard self.isInUse else { return false }
        return self.tasks.start {
            if let stored = await self.read(digest, clock: clock) {
                settle(stored, true)
                return
            }
            let outcome = (try? await call().get()) ?? .unavailable
            settle(outcome, false)
            await self.store(outcome, for: digest, clock: clock)
        }
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
