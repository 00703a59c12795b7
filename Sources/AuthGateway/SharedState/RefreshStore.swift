import NIOCore

/// What the auth service answered to one refresh token (SPEC §4.3).
enum RefreshOutcome: Sendable, Equatable {
    /// New tokens; `refreshToken` is nil when the service did not rotate it.
    case refreshed(accessToken: String, refreshToken: String?)
    /// The service refused the refresh token (400/401/403, or 2xx without an access token).
    case rejected
    /// Unreachable, timed out, 5xx, 429 or unreadable: try again later (503). Never remembered.
    case unavailable
}

/// How a request got its refresh outcome (for the single-flight metrics).
enum SingleFlightRole: Sendable, Equatable {
    /// From the grace table, without a call.
    case remembered
    /// Waited for a call another request made.
    case joined
    /// Made the call.
    case led
}

/// The refresh single flight and grace table: exactly one auth-service call per old refresh
/// token while its outcome is remembered (`graceSeconds`), whoever asks. Owned by the
/// application, so a configuration reload keeps refreshes in flight and their outcomes
/// (SPEC §2). `LocalRefreshStore` serves one process; a store shared through PostgreSQL serves
/// every replica on one database (SPEC §4.8).
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
        switch self.table.lookup(key, now: now, policy: .init(freshSeconds: Double(graceSeconds)), eventLoop: eventLoop)
        {
        case .fresh(let outcome), .stale(let outcome, _):
            return eventLoop.makeSucceededFuture((outcome, .remembered))
        case .joined(let inFlight):
            joined()
            return inFlight.map { ($0, .joined) }
        case .lead(let flight):
            call().whenComplete { result in
                let outcome = (try? result.get()) ?? .unavailable
                // The grace period starts when the outcome is known.
                self.table.settle(flight, now: self.clock(), outcome: outcome, remember: outcome != .unavailable)
            }
            return flight.promise.futureResult.map { ($0, .led) }
        }
    }

    var count: Int { self.table.count }
}
