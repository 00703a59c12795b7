import NIOConcurrencyHelpers
import NIOCore

/// Opaque access tokens checked at the RFC 7662 introspection endpoint (SPEC §4.13), once per
/// token while its answer lasts: outcomes are kept process-wide by SHA-256 of the token (never
/// the token), active ones until `exp` or `cacheSeconds`, inactive ones for
/// `negativeCacheSeconds`, failures never; concurrent requests with one unknown token make
/// one call (`LocalSingleFlight`, the table the profile cache and refreshes use).
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
    /// Written once per call (never per request).
    private let state = NIOLockedValueBox(EndpointState())

    init(configuration: IntrospectionConfiguration, capacity: Int, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double) {
        self.configuration = configuration
        self.table = LocalSingleFlight(capacity: max(capacity, 1))
        // The longest an outcome can be kept; each outcome's own end is `validUntil`.
        self.policy = .init(freshSeconds: Double(max(configuration.cacheSeconds, configuration.negativeCacheSeconds)))
        self.metrics = metrics
        self.clock = clock
    }

    var endpointState: EndpointState { self.state.withLockedValue { $0 } }

    /// The outcome for `token`: remembered, joined, or from a new call made with `client` (on
    /// the caller's loop). `counted` receives the label of an answer made without a call.
    func lookup(_ token: Substring, client: UpstreamClient, counted: (String) -> Void) -> Lookup {
        let now = self.clock()
        let step = self.table.lookup(TokenDigest(of: token), now: now, policy: self.policy, eventLoop: client.eventLoop) { $0.isCurrent(at: now) }
        switch step {
        case .fresh(let outcome), .stale(let outcome, _):
            counted("cached")
            return .known(outcome)
        case .joined(let inFlight):
            counted("coalesced")
            return .pending(inFlight)
        case .lead(let flight):
            self.call(flight, token: String(token), client: client)
            return .pending(flight.promise.futureResult)
        }
    }

    private func call(_ flight: LocalSingleFlight<TokenDigest, IntrospectionOutcome>.Flight, token: String, client: UpstreamClient) {
        let started = self.clock()
        let configuration = self.configuration
        client.execute(IntrospectionAnswer.request(for: token, configuration: configuration)).whenComplete { result in
            let finished = self.clock()
            let outcome: IntrospectionOutcome
            switch result {
            case .success(let response): outcome = IntrospectionAnswer.outcome(of: response, configuration: configuration, now: finished)
            case .failure: outcome = .unavailable
            }
            self.metrics.observe(MetricKey(MetricName.authServiceDuration, ["operation": "introspection"]), seconds: finished - started)
            self.metrics.increment(MetricKey(MetricName.introspections, ["outcome": outcome.label]))
            self.state.withLockedValue { state in
                state.lastOutcome = outcome.label
                state.lastCallAt = finished
                state.consecutiveFailures = outcome == .unavailable ? state.consecutiveFailures + 1 : 0
            }
            self.table.settle(flight, now: finished, outcome: outcome, remember: outcome != .unavailable)
        }
    }
}
