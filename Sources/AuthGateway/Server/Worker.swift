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
    /// This loop's memo of rate-limit keys (their HMACs).
    let rateLimitKeys = RateLimitKeyMemo()

    init(
        eventLoop: EventLoop, shared: GatewayShared, snapshot: RuntimeSnapshot,
        assembly: AuthenticationAssembly = .standard
    ) {
        self.assembly = assembly
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

    /// Where this loop sends refresh calls and profile fetches (also shown by `/healthz`).
    private(set) var authEndpoints = AuthServiceEndpoints()

    /// This loop's authentication pipeline for the configuration in force; rebuilt when the
    /// configuration or the loop's clients change (never per request).
    private(set) lazy var authenticator: RequestAuthenticator = self.assembly.build(self.stepContext)

    /// How the pipeline is built: the registered steps (`AuthenticationSteps`).
    private let assembly: AuthenticationAssembly

    /// What this loop's steps are built from (`AuthenticationSteps.make`).
    private var stepContext: StepContext {
        StepContext(
            eventLoop: self.eventLoop, configuration: self.snapshot.configuration,
            features: self.snapshot.authentication, state: self.shared.authentication, metrics: self.metrics,
            clients: { [unowned self] url in self.client(for: url) }, endpoints: self.authEndpoints,
            introspectionEndpoint: { [unowned self] in self.introspectionEndpoint() }, logger: self.shared.logger,
            clock: self.shared.clock)
    }

    private func buildUpstreams(for snapshot: RuntimeSnapshot) {
        self.upstreams.apply(snapshot)
        self.authEndpoints = AuthServiceEndpoints(
            configuration: snapshot.configuration.authService, authClient: self.upstreams.authServiceClient,
            keyStore: self.shared.keyStore, clients: { [unowned self] url in self.client(for: url) })
        self.authenticator = self.assembly.build(self.stepContext)
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
    func pool(for backend: ResolvedBackend) -> UpstreamPool? { self.upstreams.pool(for: backend) }
    var tracing: GatewayTracing? { self.shared.tracing }
    var isDraining: Bool { self.shared.health.isDraining }
    func wallClock() -> Double { self.shared.clock() }

    func signInTokenEndpoint(_ signIn: BrowserSignIn) -> UpstreamEndpoint? {
        SessionRefresh.tokenEndpoint(of: signIn, keyStore: self.shared.keyStore) { [unowned self] in
            self.client(for: $0)
        }
    }

    func healthResponse(path: String, method: HTTPMethod) -> LocalResponse? {
        HealthEndpoints.response(for: path, method: method, worker: self, snapshot: self.snapshot)
    }
}
