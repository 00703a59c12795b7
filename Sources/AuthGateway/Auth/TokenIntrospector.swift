import NIOConcurrencyHelpers
import NIOCore

/// Opaque access tokens checked at the RFC 7662 introspection endpoint (docs/authentication.md),
/// once per token while its answer lasts: outcomes are kept process-wide by SHA-256 of the token
/// (never the token), active ones until `exp` or `cacheSeconds`, inactive ones for
/// `negativeCacheSeconds`, failures never; concurrent requests with one unknown token make
/// one call (`LocalSingleFlight`, the table the profile cache and refreshes use).
///
/// With `sharedState` the answers are shared by every instance on the database
/// (`SharedIntrospections`): a local miss reads the shared answers before calling.
///
/// Kept across reloads while `tokens.introspection` is unchanged.
final class TokenIntrospector: Sendable {
    enum Lookup {
        case known(IntrospectionOutcome)
        case pending(EventLoopFuture<IntrospectionOutcome>)
    }

    /// The endpoint as `/healthz` shows it: the last call's outcome and when it ended.
    struct EndpointState: Sendable, Equatable {
        var lastOutcome: String?
        var lastCallAt: Double?
        var consecutiveFailures = 0
    }

    let configuration: IntrospectionConfiguration
    private let table: LocalSingleFlight<TokenDigest, IntrospectionOutcome>
    private let policy: LocalSingleFlight<TokenDigest, IntrospectionOutcome>.Policy
    private let metrics: ProcessMetrics
    private let clock: @Sendable () -> Double
    /// With `sharedState`: the answers of every instance, consulted on a local miss.
    private let shared: SharedIntrospections?
    /// Written once per call (never per request).
    private let state = NIOLockedValueBox(EndpointState())

    /// Forgets the answers about `subject`'s tokens (a Shared Signals event: docs/streams.md):
    /// their next request asks the endpoint again. Answers other instances stored in the
    /// shared table are not selectable by subject (sealed, by token digest) and end by their
    /// own `cacheSeconds`.
    @discardableResult
    func forget(subject: String) -> Int {
        self.table.forget { _, outcome in
            guard case .active(let claims, _) = outcome else { return false }
            return claims["sub"] == .string(subject)
        }
    }
    init(
        configuration: IntrospectionConfiguration, capacity: Int, metrics: ProcessMetrics,
        shared: SharedIntrospections? = nil,
        clock: @escaping @Sendable () -> Double
    ) {
        self.configuration = configuration
        self.table = LocalSingleFlight(capacity: max(capacity, 1))
        // The longest an outcome can be kept; each outcome's own end is `validUntil`.
        self.policy = .init(freshSeconds: Double(max(configuration.cacheSeconds, configuration.negativeCacheSeconds)))
        self.metrics = metrics
        self.shared = shared
        self.clock = clock
    }

    var endpointState: EndpointState { self.state.withLockedValue { $0 } }

    /// The outcome for `token`: remembered, joined, or — for the flight's leader — read from
    /// the shared table (with `sharedState`) or got from a new call to `endpoint` (resolved
    /// only then, on the caller's loop `eventLoop`: a discovered endpoint may have moved; nil
    /// when there is none yet, which is `unavailable`). `counted` receives the label of an
    /// answer made without a call.
    func lookup(
        _ token: Substring, eventLoop: EventLoop, endpoint: () -> UpstreamEndpoint?, counted: (String) -> Void
    ) -> Lookup {
        let now = self.clock()
        let digest = TokenDigest(of: token)
        let answer = self.table.lookup(
            digest, now: now, policy: self.policy, eventLoop: eventLoop, isCurrent: { $0.isCurrent(at: now) }
        ) { flight in
            self.lead(flight, token: token, digest: digest, eventLoop: eventLoop, endpoint: endpoint())
            return flight.promise.futureResult
        }
        switch answer {
        case .fresh(let outcome), .stale(let outcome):
            counted("cached")
            return .known(outcome)
        case .joined(let inFlight):
            counted("coalesced")
            return .pending(inFlight)
        case .led(let outcome):
            return .pending(outcome)
        }
    }

    /// The flight's call: read from the shared answers (with `sharedState`), else made to
    /// `endpoint` (none yet: `unavailable`).
    private func lead(
        _ flight: LocalSingleFlight<TokenDigest, IntrospectionOutcome>.Flight, token: Substring, digest: TokenDigest,
        eventLoop: EventLoop, endpoint: UpstreamEndpoint?
    ) {
        guard let endpoint else {
            self.record(.unavailable)
            self.settle(flight, .unavailable)
            return
        }
        let token = String(token)
        if let shared = self.shared {
            let bound = NIOLoopBound(endpoint, eventLoop: eventLoop)
            let resolving = shared.resolve(
                digest, clock: self.clock,
                call: { eventLoop.flatSubmit { self.call(token: token, endpoint: bound.value) } }
            ) { outcome, fromTable in
                if fromTable { self.metrics.increment(.introspection(outcome: "shared")) }
                self.settle(flight, outcome)
            }
            if resolving { return }
        }
        self.call(token: token, endpoint: endpoint).whenSuccess { self.settle(flight, $0) }
    }

    /// Ends the flight; definite outcomes are remembered until their `validUntil`.
    private func settle(
        _ flight: LocalSingleFlight<TokenDigest, IntrospectionOutcome>.Flight, _ outcome: IntrospectionOutcome
    ) {
        self.table.settle(flight, now: self.clock(), outcome: outcome, remember: outcome != .unavailable)
    }

    /// One call to the endpoint, on its client's loop; never fails (a failure is `unavailable`).
    private func call(token: String, endpoint: UpstreamEndpoint) -> EventLoopFuture<IntrospectionOutcome> {
        let started = self.clock()
        let configuration = self.configuration
        let answered = endpoint.client.eventLoop.makePromise(of: IntrospectionOutcome.self)
        let request = IntrospectionAnswer.request(for: token, configuration: configuration, path: endpoint.path)
        endpoint.client.execute(request).whenComplete { result in
            let finished = self.clock()
            let outcome: IntrospectionOutcome
            switch result {
            case .success(let response):
                outcome = IntrospectionAnswer.outcome(of: response, configuration: configuration, now: finished)
            case .failure: outcome = .unavailable
            }
            self.metrics.observe(.authServiceDuration(.introspection), seconds: finished - started)
            self.record(outcome)
            answered.succeed(outcome)
        }
        return answered.futureResult
    }

    /// Counts a call's outcome (or a call that could not be made) for the metric and `/healthz`.
    private func record(_ outcome: IntrospectionOutcome) {
        let finished = self.clock()
        self.metrics.increment(.introspection(outcome: outcome.label))
        self.state.withLockedValue { state in
            state.lastOutcome = outcome.label
            state.lastCallAt = finished
            state.consecutiveFailures = outcome == .unavailable ? state.consecutiveFailures + 1 : 0
        }
    }
}
