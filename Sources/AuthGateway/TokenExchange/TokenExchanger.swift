import NIOCore

/// One event loop's token exchanges (docs/token-exchange.md): for a route with `exchange`, the
/// token the backend receives instead of the caller's.
///
/// In front of the application's `ExchangeStore` (single flight, the process's cache and, with
/// `sharedState`, the fleet's) sits this loop's memo of the exchanges it used last, as
/// `RecentTokens` does for verifications: a keep-alive client's repeated request costs a hash
/// of its token's last bytes and one byte-wise comparison — no SHA-256, no lock, no future.
/// The memo holds only exchanged tokens the store answered, each until its `usableUntil` or
/// until a Shared Signals event forgets a subject (`SubjectChanges`), whichever is first.
///
/// Neither the subject token nor the exchanged token is ever logged.
package final class TokenExchanger {
    private struct Memo {
        let subjectToken: String
        let route: String
        let exchanged: String
        let usableUntil: Double
        /// `SubjectChanges.current` before the store was asked.
        let changes: UInt64
    }

    private let store: ExchangeStore
    private let clients: (UpstreamURL) -> UpstreamClient?
    private let metrics: WorkerMetrics?
    private let clock: @Sendable () -> Double
    private let subjectChanges: SubjectChanges
    private var memo: [Memo?]

    /// `clients`: the loop's client for the token endpoint's origin (as the Worker finds the
    /// auth service's: `UpstreamRegistry.client(for:)`); nil when it cannot be reached (an
    /// `https` URL without client TLS): the exchange is then unavailable.
    init(
        store: ExchangeStore, clients: @escaping (UpstreamURL) -> UpstreamClient?, metrics: WorkerMetrics?,
        clock: @escaping @Sendable () -> Double, subjectChanges: SubjectChanges = SubjectChanges(),
        slotCount: Int = 256
    ) {
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0, "slot count must be a power of two")
        self.store = store
        self.clients = clients
        self.metrics = metrics
        self.clock = clock
        self.subjectChanges = subjectChanges
        self.memo = Array(repeating: nil, count: slotCount)
    }

    /// The exchanged token for `subjectToken` on `route`: `.ready` from this loop's memo,
    /// else `.pending` — the store's cached answer, a call in flight to join, or a new call.
    /// `subjectExpiresAt`: the subject token's expiry (nil when unknown); no exchanged token
    /// is used past it. Runs on `eventLoop`, the loop of the clients `clients` hands out.
    func exchange(
        subjectToken: Substring, subjectExpiresAt: Double?, route: String, configuration: ExchangeConfiguration,
        now: Double, on eventLoop: EventLoop
    ) -> ExchangeResult {
        var token = subjectToken
        let slot = token.withUTF8 { Self.slot(of: UnsafeRawBufferPointer($0), route: route, count: self.memo.count) }
        let changes = self.subjectChanges.current
        if let memo = self.memo[slot], now < memo.usableUntil, memo.changes == changes, memo.route == route,
            ASCII.bytesEqual(memo.subjectToken, subjectToken)
        {
            self.metrics?.increment(.exchange(route: route, .cached))
            return .ready(memo.exchanged)
        }
        let subject = String(subjectToken)
        let key = TokenDigest.exchange(subjectToken: subjectToken, route: route)
        let answer = self.store.outcome(
            for: key, callTimeoutMilliseconds: configuration.timeoutMilliseconds, now: now, eventLoop: eventLoop
        ) {
            self.call(
                configuration, subjectToken: subject, subjectExpiresAt: subjectExpiresAt, route: route,
                on: eventLoop)
        }
        return .pending(
            answer.assumeIsolated().map { outcome, role in
                switch role {
                case .remembered: self.metrics?.increment(.exchange(route: route, .cached))
                case .joined: self.metrics?.increment(.exchange(route: route, .joined))
                case .led: break  // counted by the call
                }
                if case .exchanged(let exchanged, let usableUntil) = outcome, usableUntil > self.clock() {
                    self.memo[slot] = Memo(
                        subjectToken: subject, route: route, exchanged: exchanged, usableUntil: usableUntil,
                        changes: changes)
                }
                return outcome.result
            }.nonisolated())
    }

    /// One call to the token endpoint, bounded by `timeoutMilliseconds` whatever the client's
    /// own timeout; counted by outcome.
    private func call(
        _ configuration: ExchangeConfiguration, subjectToken: String, subjectExpiresAt: Double?, route: String,
        on eventLoop: EventLoop
    ) -> EventLoopFuture<ExchangeOutcome> {
        guard let client = self.clients(configuration.tokenEndpoint) else {
            self.metrics?.increment(.exchange(route: route, .unavailable))
            return eventLoop.makeSucceededFuture(.unavailable)
        }
        let loop = client.eventLoop
        let promise = loop.makePromise(of: ExchangeOutcome.self)
        let settled = NIOLoopBoundBox(false, eventLoop: loop)
        let metrics = self.metrics.map { NIOLoopBound($0, eventLoop: loop) }
        let finish: (ExchangeOutcome) -> Void = { outcome in
            guard !settled.value else { return }
            settled.value = true
            metrics?.value.increment(.exchange(route: route, outcome.metricOutcome))
            promise.succeed(outcome)
        }
        let timeout = loop.assumeIsolated().scheduleTask(
            in: .milliseconds(Int64(configuration.timeoutMilliseconds))
        ) { finish(.unavailable) }
        let clock = self.clock
        client.execute(ExchangeRequestBuilder.build(configuration, subjectToken: subjectToken)).assumeIsolated()
            .whenComplete { result in
                timeout.cancel()
                switch result {
                case .success(let response):
                    finish(
                        ExchangeResponseReader.outcome(of: response, subjectExpiresAt: subjectExpiresAt, now: clock()))
                case .failure:
                    finish(.unavailable)
                }
            }
        return promise.futureResult.hop(to: eventLoop)
    }

    /// A hash (randomly seeded per process) of the token's last 16 bytes and the route: which
    /// slot it lands in only decides what it evicts; a hit compares the whole token.
    private static func slot(of bytes: UnsafeRawBufferPointer, route: String, count: Int) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes.suffix(16)))
        hasher.combine(bytes.count)
        hasher.combine(route)
        return hasher.finalize() & (count - 1)
    }
}

@available(*, unavailable)
extension TokenExchanger: Sendable {}
