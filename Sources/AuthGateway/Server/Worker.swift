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
    private let recentSessionDigests = RecentSessionDigests()
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

    /// Where this loop sends refresh calls and profile fetches (also shown by `/healthz`).
    private(set) var authEndpoints = AuthServiceEndpoints()

    /// This loop's authentication pipeline for the configuration in force; rebuilt when the
    /// configuration or the loop's clients change (never per request).
    private(set) lazy var authenticator: RequestAuthenticator = self.makeAuthenticator()

    private func makeAuthenticator() -> RequestAuthenticator {
        let configuration = self.snapshot.configuration
        let clients: (UpstreamURL) -> UpstreamClient? = { [unowned self] url in self.client(for: url) }
        let endpoints = self.authEndpoints
        let verification = JWTVerification(
            cache: self.shared.verifiedTokens, memo: self.recentTokens, keyStore: self.shared.keyStore,
            eventLoop: self.eventLoop, clients: clients)
        var refresh: TokenRefresh?
        if let refreshConfiguration = configuration.authService?.refresh, let refresher = self.snapshot.refresher {
            refresh = TokenRefresh(
                configuration: refreshConfiguration, refresher: refresher, tokenSources: configuration.tokens.sources,
                endpoint: { endpoints.refreshEndpoint() }, verification: verification, logger: self.shared.logger)
        }
        let introspection = self.snapshot.introspector.map {
            TokenIntrospection(
                introspector: $0, memo: self.recentIntrospections,
                endpoint: { [unowned self] in self.introspectionEndpoint() }, eventLoop: self.eventLoop,
                metrics: self.metrics)
        }
        var session: SessionAuthentication?
        if let signIn = self.snapshot.browserSignIn, let refresher = self.snapshot.sessionRefresher {
            let issuer = signIn.configuration.issuer
            session = SessionAuthentication(
                signIn: signIn, recentDigests: self.recentSessionDigests, refresher: refresher,
                endpoint: { [unowned self] in
                    guard let url = self.shared.keyStore.discoveryDocument(issuer: issuer)?.tokenEndpoint,
                        let client = self.client(for: url)
                    else { return nil }
                    return UpstreamEndpoint(client: client, path: url.pathAndQuery.isEmpty ? "/" : url.pathAndQuery)
                }, verification: verification, eventLoop: self.eventLoop, metrics: self.metrics)
        }
        return RequestAuthenticator(
            extraction: CredentialExtraction(
                sources: configuration.tokens.sources, sessionCookies: self.snapshot.browserSignIn?.cookies),
            verification: verification,
            refresh: refresh,
            introspection: introspection,
            proofOfPossession: ProofOfPossession(
                configuration: configuration.tokens.dpop, replay: self.shared.dpopReplay,
                sharedReplay: self.shared.sharedState?.dpopReplay, nonceKey: self.shared.dpopNonceKey,
                eventLoop: self.eventLoop, paths: configuration.paths),
            profile: ProfileLookup(
                profiles: self.snapshot.profiles, configuration: configuration,
                endpoint: { endpoints.profileEndpoint() }, eventLoop: self.eventLoop, metrics: self.metrics),
            session: session,
            signInRedirect: self.snapshot.browserSignIn.map(SignInRedirect.init(signIn:)),
            apiKeys: self.snapshot.apiKeys.map {
                APIKeyAuthentication(table: $0, tokenSources: configuration.tokens.sources)
            }
        )
    }

    private func buildUpstreams(for snapshot: RuntimeSnapshot) {
        self.upstreams.apply(snapshot)
        self.authEndpoints = AuthServiceEndpoints(
            configuration: snapshot.configuration.authService, authClient: self.upstreams.authServiceClient,
            keyStore: self.shared.keyStore, clients: { [unowned self] url in self.client(for: url) })
        self.authenticator = self.makeAuthenticator()
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

    func healthResponse(path: String, method: HTTPMethod) -> LocalResponse? {
        HealthEndpoints.response(for: path, method: method, worker: self, snapshot: self.snapshot)
    }
}
