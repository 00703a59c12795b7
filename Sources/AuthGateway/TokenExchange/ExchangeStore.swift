import NIOCore

/// The exchange single flight and cache: one token-endpoint call per (subject token, route)
/// while its exchanged token is usable, whoever asks (docs/token-exchange.md). Owned by the
/// application, like the refresh store, so a reload keeps exchanges in flight and their
/// tokens. `LocalExchangeStore` serves one process; `PostgresExchangeStore` (SharedState/)
/// serves every replica on one database, through the refresh table's claim, lease, wake-ups,
/// sealed rows and sweep, under digests of their own.
protocol ExchangeStore: Sendable {
    /// The outcome for the exchange keyed `key`: remembered, joined, or made by `call`, which
    /// runs on `eventLoop` at most once per key while its token is usable.
    /// `callTimeoutMilliseconds` bounds `call` (a shared store's lease lasts that plus a
    /// second). Only an exchanged token is kept — until its `usableUntil` — never a refusal or
    /// a failure. The future completes on `eventLoop`.
    func outcome(
        for key: TokenDigest, callTimeoutMilliseconds: Int, now: Double, eventLoop: EventLoop,
        call: @escaping () -> EventLoopFuture<ExchangeOutcome>
    ) -> EventLoopFuture<(ExchangeOutcome, SingleFlightRole)>

    // helper/streams hook (docs/streams.md, "Shared Signals"): a `credential-change` or
    // `token-claims-change` event drops the subject's exchanged tokens.
    /// Forgets the exchanged tokens this process remembers that `matches` selects; how many.
    @discardableResult
    func forget(where matches: (_ exchangedToken: String) -> Bool) -> Int
}

extension TokenDigest {
    /// The store's key of an exchange: SHA-256 over a label of its own, the route and the
    /// subject token, so that it never meets a refresh token's digest in a shared table and
    /// one subject token exchanged for two routes makes two entries.
    static func exchange(subjectToken: Substring, route: String) -> TokenDigest {
        // The route's length first, so no (route, token) pair reads as another.
        var bytes: [UInt8] = Array("auth-gateway token exchange\0".utf8)
        withUnsafeBytes(of: UInt32(route.utf8.count).bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: route.utf8)
        bytes.append(contentsOf: subjectToken.utf8)
        return bytes.withUnsafeBytes { TokenDigest(of: $0) }
    }
}

/// The process-local exchange store (the embedded default): a `LocalSingleFlight` keyed by the
/// exchange's digest; an exchanged token is answered until its `usableUntil`.
final class LocalExchangeStore: ExchangeStore {
    private let table: LocalSingleFlight<TokenDigest, ExchangeOutcome>
    private let clock: @Sendable () -> Double

    init(capacity: Int = 100_000, clock: @escaping @Sendable () -> Double) {
        self.table = LocalSingleFlight(capacity: capacity)
        self.clock = clock
    }

    func outcome(
        for key: TokenDigest, callTimeoutMilliseconds: Int, now: Double, eventLoop: EventLoop,
        call: @escaping () -> EventLoopFuture<ExchangeOutcome>
    ) -> EventLoopFuture<(ExchangeOutcome, SingleFlightRole)> {
        self.table.lookup(key, now: now, policy: Self.policy, eventLoop: eventLoop, isCurrent: { $0.isUsable(at: now) })
        {
            flight in
            let clock = self.clock
            self.table.settle(flight, when: call(), failure: .unavailable, clock: clock) { $0.isUsable(at: clock()) }
            return flight.promise.futureResult.map { ($0, .led) }
        }.outcome(on: eventLoop, joined: {})
    }

    /// Kept as long as `isUsable` says: the token's own expiry decides, not an age.
    static var policy: LocalSingleFlight<TokenDigest, ExchangeOutcome>.Policy { .init(freshSeconds: .infinity) }

    func forget(where matches: (_ exchangedToken: String) -> Bool) -> Int {
        self.table.forget { _, outcome in
            if case .exchanged(let token, _) = outcome { return matches(token) }
            return false
        }
    }

    var count: Int { self.table.count }
}
