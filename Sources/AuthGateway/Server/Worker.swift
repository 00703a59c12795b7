import NIOCore
import NIOHTTP1

/// Everything one event loop owns (Envoy's worker model): its upstreams, its view of the
/// configuration and keys, its metrics and access log, its open client connections. Only ever
/// touched on `eventLoop`, so the request path takes no lock for any of it.
package final class Worker {
    package let eventLoop: EventLoop
    let shared: GatewayShared
    let metrics: WorkerMetrics
    private(set) var accessLog: AccessLog
    private(set) var snapshot: RuntimeSnapshot
    private(set) var keys: KeySnapshot
    /// The loop's pool for each backend of `snapshot`, and its clients for the gateway's own calls.
    let upstreams: UpstreamRegistry
    /// Open client connections, for the connection limit, the gauge and draining.
    let connections: ConnectionRegistry
    private var requestIDs = RequestIDGenerator()
    private let recentTokens = RecentTokens()
    private let recentIntrospections = RecentIntrospections()
    /// This loop's memo of rate-limit keys (their HMACs).
    let rateLimitKeys = RateLimitKeyMemo()

    init(eventLoop: EventLoop, shared: GatewayShared, snapshot: RuntimeSnapshot) {
        self.eventLoop = eventLoop
        self.shared = shared
        self.snapshot = snapshot
        self.keys = shared.keyStore.snapshot
        self.accessLog = AccessLog(enabled: snapshot.configuration.logging.accessLog)
        let metrics = WorkerMetrics()
        self.metrics = metrics
        self.upstreams = UpstreamRegistry(eventLoop: eventLoop, shared: shared)
        self.connections = ConnectionRegistry(count: shared.clientConnections, metrics: metrics)
        self.buildUpstreams(for: snapshot)
    }

    // MARK: Configuration and keys

    /// Adopts a reloaded configuration; requests in flight keep the snapshot they hold.
    func apply(_ snapshot: RuntimeSnapshot) {
        self.eventLoop.preconditionInEventLoop()
        self.snapshot = snapshot
        if self.accessLog.isEnabled != snapshot.configuration.logging.accessLog {
            self.accessLog.flush()
            self.accessLog = AccessLog(enabled: snapshot.configuration.logging.accessLog)
        }
        self.buildUpstreams(for: snapshot)
    }

    func apply(_ keys: KeySnapshot) {
        self.eventLoop.preconditionInEventLoop()
        if keys.generation > self.keys.generation { self.keys = keys }
    }

    /// The client's `X-Request-Id` when well formed, else a new one.
    func requestID(forwarded value: String?) -> String {
        RequestID.forwardedOrNew(value, using: &self.requestIDs)
    }

    /// The loop's client for `url`'s origin (`UpstreamRegistry.client(for:)`).
    func client(for url: UpstreamURL) -> UpstreamClient? { self.upstreams.client(for: url) }

    /// The caches and clients this loop lends every request's authentication; rebuilt when
    /// the upstream clients change (a closure or struct built per request would cost).
    private(set) lazy var authServices: AuthServices = self.makeAuthServices(authClient: nil, configuration: nil)

    private func makeAuthServices(authClient: UpstreamClient?, configuration: AuthServiceConfiguration?) -> AuthServices
    {
        let clients: (UpstreamURL) -> UpstreamClient? = { [unowned self] url in self.client(for: url) }
        var services = AuthServices(
            eventLoop: self.eventLoop,
            verifiedTokens: self.shared.verifiedTokens,
            recentTokens: self.recentTokens,
            keyStore: self.shared.keyStore,
            endpoints: AuthServiceEndpoints(
                configuration: configuration, authClient: authClient, keyStore: self.shared.keyStore, clients: clients),
            clients: clients,
            metrics: self.metrics
        )
        if self.snapshot.configuration.tokens.introspection != nil {
            services.introspectionEndpoint = { [unowned self] in self.introspectionEndpoint() }
            services.recentIntrospections = self.recentIntrospections
        }
        services.dpopReplay = self.shared.dpopReplay
        services.sharedDPoPReplay = self.shared.sharedState?.dpopReplay
        services.dpopNonceKey = self.shared.dpopNonceKey
        return services
    }

    private func buildUpstreams(for snapshot: RuntimeSnapshot) {
        self.upstreams.apply(snapshot)
        self.authServices = self.makeAuthServices(
            authClient: self.upstreams.authServiceClient, configuration: snapshot.configuration.authService)
    }

    /// Where an introspection call goes now (`UpstreamRegistry.introspectionEndpoint`).
    private func introspectionEndpoint() -> UpstreamEndpoint? {
        self.upstreams.introspectionEndpoint(self.snapshot.configuration.tokens.introspection)
    }
}

@available(*, unavailable)
extension Worker: Sendable {}

/// The narrow view an exchange has of its loop (`ExchangeEnvironment`).
extension Worker: ExchangeEnvironment {
    func pool(for backend: ResolvedBackend) -> UpstreamPool { self.upstreams.pool(for: backend) }
    var tracing: GatewayTracing? { self.shared.tracing }
    var isDraining: Bool { self.shared.health.isDraining }
    func wallClock() -> Double { self.shared.clock() }

    func healthResponse(path: String, method: HTTPMethod) -> LocalResponse? {
        HealthEndpoints.response(for: path, method: method, worker: self, snapshot: self.snapshot)
    }
}
