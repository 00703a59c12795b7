import NIOHTTP1

/// What an exchange may use of the event loop it runs on — and nothing else: the configuration
/// snapshot, the pool lookup, the key snapshot and the calls authentication makes, the typed
/// metrics sink, the access log, the tracer, the clock, request IDs, drain. The HTTP/1.1 and
/// HTTP/2 handlers and `RequestPlanner` hold one of these instead of reaching through `Worker`
/// into `GatewayShared` (Hummingbird's `RequestContext` is the model). `Worker` is the one
/// implementation; everything here is read on the loop, without locks.
protocol ExchangeEnvironment: AnyObject {
    /// The configuration in force: replaced on reload, read afresh by each request.
    var snapshot: RuntimeSnapshot { get }
    /// The verification keys in force.
    var keys: KeySnapshot { get }
    /// The loop's pool for one of `snapshot`'s backends.
    func pool(for backend: ResolvedBackend) -> UpstreamPool?
    /// The loop's authentication pipeline for the configuration in force.
    var authenticator: RequestAuthenticator { get }
    /// The sign-in provider's `token_endpoint` with this loop's client (sign-in callbacks).
    func signInTokenEndpoint(_ signIn: BrowserSignIn) -> UpstreamEndpoint?
    /// The loop's memo of rate-limit keys.
    var rateLimitKeys: RateLimitKeyMemo { get }
    var metrics: WorkerMetrics { get }
    var accessLog: AccessLog { get }
    /// Sampled requests' traces; nil when tracing is off.
    var tracing: GatewayTracing? { get }
    /// Wall-clock seconds since 1970 (injected by tests).
    func wallClock() -> Double
    /// The gateway is draining: every answer from now on is its connection's last.
    var isDraining: Bool { get }
    /// The client's `X-Request-Id` when it is acceptable, else a new one.
    func requestID(forwarded value: String?) -> String
    /// The answer of a health endpoint at `path`, nil for any other path.
    func healthResponse(path: String, method: HTTPMethod) -> LocalResponse?
    /// The loop's long-lived streams (docs/streams.md).
    var streams: LoopStreams { get }
}
