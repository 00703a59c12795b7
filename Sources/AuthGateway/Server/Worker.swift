import NIOCore
import NIOHTTP1

/// Everything one event loop owns (Envoy's worker model): its upstream pools, its view of the
/// configuration and keys, its metrics and access log, its open client connections. Only ever
/// touched on `eventLoop`, so the request path takes no lock for any of it.
package final class Worker {
    package let eventLoop: EventLoop
    let shared: GatewayShared
    let metrics = WorkerMetrics()
    private(set) var accessLog: AccessLog
    private(set) var snapshot: RuntimeSnapshot
    private(set) var keys: KeySnapshot
    /// Each backend's pool, and apart from it the configuration it was built from (kept
    /// apart: reading a (configuration, pool) tuple per request copied the configuration).
    private var backendPools: [String: UpstreamPool] = [:]
    private var backendConfigurations: [String: BackendConfiguration] = [:]
    /// The loop's clients for the gateway's own calls, by origin: the auth service, JWKS URLs,
    /// discovery documents, and (made on first use) the endpoints discovery documents name.
    private var clients: [String: UpstreamClient] = [:]
    /// Origins whose client was made on first use for a discovered endpoint.
    private var discoveredOrigins: Set<String> = []
    private var clientTimeout = TimeAmount.milliseconds(3000)
    /// The loop's client for the introspection endpoint (`tokens.introspection.url`, or the
    /// origin of the discovered `introspection_endpoint`, made on first use): a pool of its
    /// own, with the introspection timeout.
    private var introspectionClient: UpstreamClient?
    private var requestIDs = RequestIDGenerator()
    private let recentTokens = RecentTokens()
    private let recentIntrospections = RecentIntrospections()
    /// This loop's memo of rate-limit keys (their HMACs).
    let rateLimitKeys = RateLimitKeyMemo()
    /// Open client connections, for draining.
    private var connections: [ObjectIdentifier: Channel] = [:]

    init(eventLoop: EventLoop, shared: GatewayShared, snapshot: RuntimeSnapshot) {
        self.eventLoop = eventLoop
        self.shared = shared
        self.snapshot = snapshot
        self.keys = shared.keyStore.snapshot
        self.accessLog = AccessLog(enabled: snapshot.configuration.logging.accessLog)
        // Scraped as 0 from the start, not absent until the first client connects (a series
        // that appears only later breaks `rate`, alerts and dashboards).
        self.metrics.addGauge(.openConnections, 0)
        self.buildUpstreams(for: snapshot.configuration)
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
        self.buildUpstreams(for: snapshot.configuration)
    }

    func apply(_ keys: KeySnapshot) {
        self.eventLoop.preconditionInEventLoop()
        if keys.generation > self.keys.generation { self.keys = keys }
    }

    func pool(forBackend name: String) -> UpstreamPool? { self.backendPools[name] }

    /// The client's `X-Request-Id` when well formed, else a new one.
    func requestID(forwarded value: String?) -> String {
        RequestID.forwardedOrNew(value, using: &self.requestIDs)
    }

    /// The loop's client for `url`'s origin: a configured one, or one made now for an endpoint
    /// of a discovery document (a provider's `jwks_uri`, `token_endpoint` and
    /// `userinfo_endpoint` may live on other origins than anything configured). Nil for an
    /// `https` URL when the gateway has no client TLS.
    func client(for url: UpstreamURL) -> UpstreamClient? {
        let origin = Self.origin(url)
        if let client = self.clients[origin] { return client }
        if url.isTLS && self.shared.clientTLS == nil { return nil }
        self.pruneDiscoveredClients()
        let base = UpstreamURL(scheme: url.scheme, host: url.host, port: url.port, pathAndQuery: "")
        let client = self.makeClient(name: "discovered", url: base, timeout: self.clientTimeout, reuse: nil)
        self.clients[origin] = client
        self.discoveredOrigins.insert(origin)
        return client
    }

    /// The name `/healthz` finds `url`'s connect results under, when the loop has a client
    /// for its origin.
    func dependencyName(for url: UpstreamURL) -> String? {
        self.clients[Self.origin(url)].map { "\($0.pool.name) \($0.pool.targets[0])" }
    }

    /// Drops clients made for endpoints no accepted discovery document names any more, so a
    /// provider that moves its endpoints around does not grow the loop's clients.
    private func pruneDiscoveredClients() {
        guard self.discoveredOrigins.count >= 8 else { return }
        let current = Set(self.shared.keyStore.discoveredURLs.map(Self.origin))
        for origin in self.discoveredOrigins where !current.contains(origin) {
            self.clients.removeValue(forKey: origin)?.pool.shutdown()
            self.discoveredOrigins.remove(origin)
        }
    }

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
        return RequestAuthenticator(
            extraction: CredentialExtraction(sources: configuration.tokens.sources),
            verification: verification,
            refresh: refresh,
            introspection: introspection,
            proofOfPossession: ProofOfPossession(
                configuration: configuration.tokens.dpop, replay: self.shared.dpopReplay,
                sharedReplay: self.shared.sharedState?.dpopReplay, nonceKey: self.shared.dpopNonceKey,
                eventLoop: self.eventLoop),
            profile: ProfileLookup(
                profiles: self.snapshot.profiles, configuration: configuration,
                endpoint: { endpoints.profileEndpoint() }, eventLoop: self.eventLoop, metrics: self.metrics)
        )
    }

    private func buildUpstreams(for configuration: GatewayConfiguration) {
        var pools: [String: UpstreamPool] = [:]
        var configurations: [String: BackendConfiguration] = [:]
        for backend in configuration.backends {
            configurations[backend.name] = backend
            if let existing = self.backendPools[backend.name], self.backendConfigurations[backend.name] == backend,
                existing.availability === self.snapshot.backendAvailability[backend.name] ?? existing.availability
            {
                pools[backend.name] = existing
                continue
            }
            pools[backend.name] = self.makePool(
                name: "backend \(backend.name)",
                targets: backend.urls,
                maxConnections: backend.maxConnectionsPerThread,
                connectTimeout: .milliseconds(Int64(backend.connectTimeoutMilliseconds)),
                wireProtocol: backend.wireProtocol,
                tls: self.snapshot.backendTLS[backend.name],
                availability: self.snapshot.backendAvailability[backend.name]
            )
        }
        for (name, old) in self.backendPools where pools[name] !== old {
            old.shutdown()
        }
        self.backendPools = pools
        self.backendConfigurations = configurations

        // The auth service, JWKS and discovery endpoints are upstreams like any other (issue:
        // one pool kind for everything behind the gateway).
        let timeout = TimeAmount.milliseconds(Int64(configuration.authService?.timeoutMilliseconds ?? 3000))
        var clients: [String: UpstreamClient] = [:]
        var authClient: UpstreamClient?
        if let url = configuration.authService?.url {
            authClient = self.makeClient(
                name: "auth service", url: url, timeout: timeout, reuse: self.clients[Self.origin(url)])
            clients[Self.origin(url)] = authClient
        }
        for issuer in configuration.tokens.issuers {
            guard let source = issuer.jwks?.source, clients[Self.origin(source.fetchURL)] == nil else { continue }
            let name = if case .discovery = source { "discovery" } else { "jwks" }
            clients[Self.origin(source.fetchURL)] = self.makeClient(
                name: name, url: source.fetchURL, timeout: timeout, reuse: self.clients[Self.origin(source.fetchURL)])
        }
        // Clients for what the current discovery documents name stay (with their connections).
        var discovered: Set<String> = []
        for url in self.shared.keyStore.discoveredURLs {
            let origin = Self.origin(url)
            guard clients[origin] == nil, let existing = self.clients[origin], existing.timeout == timeout,
                self.discoveredOrigins.contains(origin)
            else { continue }
            clients[origin] = existing
            discovered.insert(origin)
        }
        for old in self.clients.values where !clients.values.contains(where: { $0 === old }) {
            old.pool.shutdown()
        }
        self.clients = clients
        self.discoveredOrigins = discovered
        self.clientTimeout = timeout
        let introspection = configuration.tokens.introspection
        // A discovered endpoint's client is made (or kept) when a call needs it.
        let introspectionClient = introspection.flatMap { introspection in
            guard let url = introspection.url else {
                return introspection.discoveryIssuer == nil ? nil : self.introspectionClient
            }
            return self.makeClient(
                name: "introspection", url: url, timeout: .milliseconds(Int64(introspection.timeoutMilliseconds)),
                reuse: self.introspectionClient
            )
        }
        if let old = self.introspectionClient, old !== introspectionClient { old.pool.shutdown() }
        self.introspectionClient = introspectionClient
        self.authEndpoints = AuthServiceEndpoints(
            configuration: configuration.authService, authClient: authClient, keyStore: self.shared.keyStore,
            clients: { [unowned self] url in self.client(for: url) })
        self.authenticator = self.makeAuthenticator()
    }

    /// Where an introspection call goes now: the configured `url` on its client, or the
    /// `introspection_endpoint` of the issuer's accepted discovery document on a client for its
    /// origin (made on first use, replaced when the document moves it). Nil without a
    /// document yet, or for `https` without client TLS. Asked only when a call is made.
    private func introspectionEndpoint() -> UpstreamEndpoint? {
        guard let introspection = self.snapshot.configuration.tokens.introspection else { return nil }
        if let url = introspection.url {
            return self.introspectionClient.map { UpstreamEndpoint(client: $0, path: url.pathAndQuery) }
        }
        guard let issuer = introspection.discoveryIssuer,
            let url = self.shared.keyStore.discoveryDocument(issuer: issuer)?.introspectionEndpoint,
            !url.isTLS || self.shared.clientTLS != nil
        else { return nil }
        let base = UpstreamURL(scheme: url.scheme, host: url.host, port: url.port, pathAndQuery: "")
        let timeout = TimeAmount.milliseconds(Int64(introspection.timeoutMilliseconds))
        let client = self.makeClient(
            name: "introspection", url: base, timeout: timeout, reuse: self.introspectionClient)
        if let old = self.introspectionClient, old !== client { old.pool.shutdown() }
        self.introspectionClient = client
        return UpstreamEndpoint(client: client, path: url.pathAndQuery)
    }

    private func makeClient(
        name: String, url: UpstreamURL, timeout: TimeAmount, reuse existing: UpstreamClient?
    ) -> UpstreamClient {
        if let existing, existing.pool.name == name, existing.pool.targets == [url], existing.timeout == timeout {
            return existing
        }
        let tls = self.shared.clientTLS.map { UpstreamTLS(context: $0, serverName: nil) }
        let pool = self.makePool(name: name, targets: [url], maxConnections: 64, connectTimeout: timeout, tls: tls)
        return UpstreamClient(pool: pool, timeout: timeout, hostHeader: url.hostHeader)
    }

    private func makePool(
        name: String, targets: [UpstreamURL], maxConnections: Int, connectTimeout: TimeAmount,
        wireProtocol: BackendConfiguration.WireProtocol = .http1,
        tls: UpstreamTLS?, availability: TargetAvailability? = nil
    ) -> UpstreamPool {
        let pool = UpstreamPool(
            name: name,
            eventLoop: self.eventLoop,
            targets: targets,
            maxConnections: maxConnections,
            connectTimeout: connectTimeout,
            tls: tls,
            connector: self.shared.connector,
            wireProtocol: wireProtocol,
            availability: availability
        )
        let health = self.shared.health
        let clock = self.shared.clock
        pool.onConnectResult = { index, success, error in
            health.record("\(name) \(targets[index])", success: success, error: error, now: clock())
        }
        return pool
    }

    static func origin(_ url: UpstreamURL) -> String { "\(url.scheme.rawValue)://\(url.hostHeader)" }

    // MARK: Connections

    func connectionOpened(_ channel: Channel) {
        self.connections[ObjectIdentifier(channel)] = channel
        self.metrics.addGauge(.openConnections, 1)
    }

    func connectionClosed(_ channel: Channel) {
        if self.connections.removeValue(forKey: ObjectIdentifier(channel)) != nil {
            self.metrics.addGauge(.openConnections, -1)
            self.shared.connectionClosed()
        }
    }

    var openConnectionCount: Int { self.connections.count }

    /// Asks every connection to finish its request in flight and close (drain).
    func quiesceConnections() {
        for channel in self.connections.values {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    func closeAllConnections() {
        for channel in self.connections.values { channel.close(promise: nil) }
    }
}

@available(*, unavailable)
extension Worker: Sendable {}

/// The narrow view an exchange has of its loop (`ExchangeEnvironment`).
extension Worker: ExchangeEnvironment {
    var tracing: GatewayTracing? { self.shared.tracing }
    var isDraining: Bool { self.shared.health.isDraining }
    func wallClock() -> Double { self.shared.clock() }

    func healthResponse(path: String, method: HTTPMethod) -> LocalResponse? {
        HealthEndpoints.response(for: path, method: method, worker: self, snapshot: self.snapshot)
    }
}
