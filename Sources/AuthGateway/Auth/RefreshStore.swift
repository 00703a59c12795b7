import NIOCore

/// The refresh single flight and grace table: exactly one auth-service call per old refresh
/// token while its outcome is remembered (`graceSeconds`), whoever asks. Owned by the
/// application, so a configuration reload keeps refreshes in flight and their outcomes
/// (docs/operations.md). `LocalRefreshStore` serves one process; a store shared through
/// PostgreSQL serves every replica on one database (docs/shared-state.md).
protocol RefreshStore: Sendable {
    /// The outcome for the refresh token hashed as `key`: remembered, joined, or made by
    /// `call`, which runs on `eventLoop` at most once per key while an outcome is remembered.
    /// `callTimeoutMilliseconds` bounds `call` (a shared store's lease lasts that plus a
    /// second). `joined` runs as soon as the request is known to wait for a call someone else
    /// makes (so waiters are visible while they wait). The future completes on `eventLoop`.
    func outcome(
        for key: TokenDigest, graceSeconds: Int, callTimeoutMilliseconds: Int, now: Double, eventLoop: EventLoop,
        joined: @escaping @Sendable () -> Void,
        call: @escaping () -> EventLoopFuture<RefreshOutcome>
    ) -> EventLoopFuture<(RefreshOutcome, SingleFlightRole)>

    /// Forgets the remembered outcomes whose new access token is `subject`'s (a Shared Signals
    /// event: docs/streams.md), so that a replayed refresh token is redeemed afresh.
    @discardableResult
    func forget(subject: String) -> Int
}

extension RefreshStore {
    /// A store whose outcomes cannot be selected by subject (the shared table's rows are
    /// sealed and keyed by the refresh token's digest): they end with their grace period.
    @discardableResult
    func forget(subject: String) -> Int { 0 }
}

/// The process-local refresh store (the embedded default): a `LocalSingleFlight` keyed by the
/// SHA-256 of the old refresh token. Definite answers are remembered for `graceSeconds`;
/// "unavailable" is not, so the next request tries again.
final class LocalRefreshStore: RefreshStore {
    private let table: LocalSingleFlight<TokenDigest, RefreshOutcome>
    private let clock: @Sendable () -> Double

    init(capacity: Int = 100_000, clock: @escaping @Sendable () -> Double) {
        self.table = LocalSingleFlight(capacity: capacity)
        self.clock = clock
    }

    func outcome(
        for key: TokenDigest, graceSeconds: Int, callTimeoutMilliseconds: Int, now: Double, eventLoop: EventLoop,
        joined: @escaping @Sendable () -> Void,
        call: @escaping () -> EventLoopFuture<RefreshOutcome>
    ) -> EventLoopFuture<(RefreshOutcome, SingleFlightRole)> {
        let policy = LocalSingleFlight<TokenDigest, RefreshOutcome>.Policy(freshSeconds: Double(graceSeconds))
        return self.table.lookup(key, now: now, policy: policy, eventLoop: eventLoop) { flight in
            // The grace period starts when the outcome is known.
            self.table.settle(flight, when: call(), failure: .unavailable, clock: self.clock) { $0 != .unavailable }
            return flight.promise.futureResult.map { ($0, .led) }
        }.outcome(on: eventLoop, joined: joined)
    }

    @discardableResult
    func forget(subject: String) -> Int {
        self.table.forget { _, outcome in
            guard case .refreshed(let accessToken, _) = outcome else { return false }
            return CompactJWS.storedPayload(accessToken[...])?["sub"] == .string(subject)
        }
    }

    var count: Int { self.table.count }
}
