import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// The gateway, built from a validated configuration: event loops with their workers, the
/// process-wide caches and coordinators, the listeners. Used by `auth-gateway serve`, by the
/// demo and by the tests (on `127.0.0.1:0`).
public final class GatewayApplication: Sendable {
    public let logger: Logger
    let shared: GatewayShared
    let workers: [NIOLoopBound<Worker>]
    private let group: MultiThreadedEventLoopGroup
    private let metricsCollector: MetricsCollector
    private let state: NIOLockedValueBox<State>
    private let listenerTLS: NIOSSLContext?
    /// Active health checks (SPEC §4.11), one loop per process; among `backgroundServices`.
    private let prober: HealthProber

    private struct State {
        var configuration: GatewayConfiguration
        var generation: UInt64
        /// Kept across reloads while the profile section is unchanged (SPEC §2).
        var profiles: ProfileCache?
        /// Kept across reloads while `tokens.introspection` is unchanged.
        var introspector: TokenIntrospector?
        /// Its tables (the buckets) of unchanged limits are kept across reloads (SPEC §4.12).
        var rateLimiter: RateLimiter?
        var main: Channel?
        var admin: Channel?
        var flushTasks: [RepeatedTask] = []
        var stopped = false
        /// The start-up fetch of each remote key set (SPEC §2: once).
        var startupFetches: [String: EventLoopFuture<Bool>] = [:]
        var startSettled = false
    }

    /// Completed once `start()` has bound the listeners and begun the start-up key fetches
    /// (failed when it could not, or on shutdown before a start).
    private let started: EventLoopPromise<Void>

    /// Builds everything; listens only after `start()`.
    public static func make(
        configuration: GatewayConfiguration,
        logger: Logger = Logger(label: "auth-gateway"),
        clock: @escaping @Sendable () -> Double = GatewayApplication.systemClock
    ) async throws -> GatewayApplication {
        let threads = configuration.eventLoopThreads == 0 ? System.coreCount : configuration.eventLoopThreads
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        do {
            return try await GatewayApplication(configuration: configuration, logger: logger, clock: clock, group: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private init(configuration: GatewayConfiguration, logger: Logger, clock: @escaping @Sendable () -> Double, group: MultiThreadedEventLoopGroup) async throws {
        self.logger = logger
        self.group = group
        let publisher = KeyPublisher()
        var tracing: GatewayTracing?
        var backgroundServices: [any Service] = []
        let processMetrics = ProcessMetrics()
        if let tracingConfiguration = configuration.tracing {
            let (made, exporter) = try GatewayTracing.make(tracingConfiguration, metrics: processMetrics)
            tracing = made
            backgroundServices.append(exporter)
        }
        let shared = try Self.makeShared(
            configuration, clock: clock, logger: logger, connector: SocketConnector(), publisher: publisher, group: group, tracing: tracing,
            processMetrics: processMetrics
        )
        self.shared = shared
        let prober = HealthProber(shared: shared)
        backgroundServices.append(prober)
        self.prober = prober
        self.backgroundServices = backgroundServices
        self.listenerTLS = try configuration.listener.tls.map { try Self.makeServerTLS($0, http2: configuration.listener.http2) }
        let profiles = Self.profileCache(for: configuration, keeping: nil, shared: shared)
        let introspector = Self.introspector(for: configuration, keeping: nil, shared: shared)
        let rateLimiter = RateLimiter.make(configuration: configuration, keeping: nil, syncsUsage: shared.sharedState != nil)
        shared.sharedState?.attachRateLimiter(rateLimiter)
        let snapshot = Self.makeSnapshot(
            configuration, generation: 1, shared: shared, profiles: profiles, introspector: introspector, rateLimiter: rateLimiter,
            backendTLS: try UpstreamTLS.backends(configuration)
        )
        var workers: [NIOLoopBound<Worker>] = []
        for eventLoop in group.makeIterator() {
            let worker = try await eventLoop.submit {
                NIOLoopBound(Worker(eventLoop: eventLoop, shared: shared, snapshot: snapshot), eventLoop: eventLoop)
            }.get()
            workers.append(worker)
        }
        self.workers = workers
        prober.attach(eventLoop: workers[0].eventLoop)
        prober.apply(snapshot)
        publisher.attach(workers)
        self.metricsCollector = MetricsCollector(workers: workers, shared: shared)
        self.started = workers[0].eventLoop.makePromise(of: Void.self)
        self.state = NIOLockedValueBox(
            State(configuration: configuration, generation: 1, profiles: profiles, introspector: introspector, rateLimiter: rateLimiter)
        )
    }

    /// What all event loops share, as `serve` builds it; keys reach the loops through
    /// `publisher`. The refresh store is shared through PostgreSQL when `sharedState` is
    /// configured and there is an event loop group to run its client on (not in the embedded
    /// one-worker harness), else process-local.
    private static func makeShared(
        _ configuration: GatewayConfiguration, clock: @escaping @Sendable () -> Double, logger: Logger, connector: UpstreamConnector, publisher: KeyPublisher,
        group: EventLoopGroup?, tracing: GatewayTracing? = nil, processMetrics: ProcessMetrics = ProcessMetrics()
    ) throws -> GatewayShared {
        let keyStore = KeyStore(configuration: configuration.tokens, metrics: processMetrics, clock: clock, logger: logger) { snapshot in
            publisher.publish(snapshot)
        }
        // A discovery document may name https endpoints whatever the issuer's scheme. Backends
        // have their own TLS (`UpstreamTLS.backends`): the auth service's CA is not theirs.
        let usesTLSUpstream =
            configuration.authService?.url?.isTLS == true || configuration.tokens.introspection?.url?.isTLS == true
            || configuration.tokens.issuers.contains { $0.jwks?.url?.isTLS == true || $0.jwks?.discovery != nil }
        let clientTLS = usesTLSUpstream ? try GatewayShared.makeClientTLS(caFile: configuration.authService?.caCertificatePEMFile) : nil
        let sharedState = try configuration.sharedState.flatMap { sharedState in
            try group.map {
                try PostgresSharedState(configuration: sharedState, eventLoopGroup: $0, metrics: processMetrics, logger: logger, clock: clock)
            }
        }
        return GatewayShared(
            verifiedTokens: VerifiedTokenCache(capacity: configuration.tokens.verifiedCacheEntries),
            keyStore: keyStore,
            health: HealthState(),
            processMetrics: processMetrics,
            refreshStore: sharedState?.store ?? LocalRefreshStore(clock: clock),
            clock: clock,
            clientTLS: clientTLS,
            connector: connector,
            tracing: tracing,
            sharedState: sharedState,
            logger: logger,
            dpopNonceKey: DPoPNonce.key(sharedSecret: configuration.sharedState?.encryptionKey)
        )
    }

    /// One worker built exactly as `serve` builds each of its loops' workers, on `eventLoop`
    /// (an `EmbeddedEventLoop` in the in-process harness of `AuthGatewayTesting`), opening
    /// upstream connections with `connector`. Must be called on `eventLoop`.
    package static func makeWorker(
        configuration: GatewayConfiguration, eventLoop: EventLoop, clock: @escaping @Sendable () -> Double, connector: UpstreamConnector
    ) throws -> Worker {
        let publisher = KeyPublisher()
        let shared = try Self.makeShared(configuration, clock: clock, logger: Logger(label: "auth-gateway"), connector: connector, publisher: publisher, group: nil)
        let profiles = Self.profileCache(for: configuration, keeping: nil, shared: shared)
        let introspector = Self.introspector(for: configuration, keeping: nil, shared: shared)
        let rateLimiter = RateLimiter.make(configuration: configuration, keeping: nil)
        let snapshot = Self.makeSnapshot(
            configuration, generation: 1, shared: shared, profiles: profiles, introspector: introspector, rateLimiter: rateLimiter,
            backendTLS: try UpstreamTLS.backends(configuration)
        )
        let worker = Worker(eventLoop: eventLoop, shared: shared, snapshot: snapshot)
        publisher.attach([NIOLoopBound(worker, eventLoop: eventLoop)])
        return worker
    }

    /// Background work the application needs beside `GatewayService` (the trace exporter):
    /// run them in the same service group.
    public let backgroundServices: [any Service]

    /// Unix time in seconds.
    public static let systemClock: @Sendable () -> Double = GatewayShared.systemClock

    public var configuration: GatewayConfiguration { self.state.withLockedValue { $0.configuration } }

    /// Where the main listener is bound (its port is real even when configured as 0).
    public var mainAddress: SocketAddress? { self.state.withLockedValue { $0.main?.localAddress } }
    public var adminAddress: SocketAddress? { self.state.withLockedValue { $0.admin?.localAddress } }

    public var isReady: Bool { HealthEndpoints.readiness(self.shared).0 }

    // MARK: Lifecycle

    /// Binds the listeners and starts fetching remote keys (readiness waits for them).
    public func start() async throws {
        let configuration = self.configuration
        let main: Channel
        var admin: Channel?
        do {
            main = try await self.bindMain(configuration.listener)
            if let adminListener = configuration.admin {
                do {
                    admin = try await self.bindAdmin(adminListener)
                } catch {
                    try? await main.close()
                    throw error
                }
            }
        } catch {
            self.settleStart(with: error)
            throw error
        }
        var tasks: [RepeatedTask] = []
        for worker in self.workers {
            tasks.append(worker.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                worker.value.accessLog.flush()
            })
        }
        self.state.withLockedValue { state in
            state.main = main
            state.admin = admin
            state.flushTasks = tasks
        }
        self.shared.health.markConfigActive()
        self.shared.sharedState?.start()
        Self.warnAboutInsecureBackends(configuration, logger: self.logger)
        self.logger.info(
            "gateway.listening",
            metadata: [
                "listener.address": "\(main.localAddress?.description ?? "?")",
                "admin.address": "\(admin?.localAddress?.description ?? "off")",
                "event_loops": "\(self.workers.count)",
            ]
        )
        var fetches: [String: EventLoopFuture<Bool>] = [:]
        for issuer in self.shared.keyStore.remoteIssuers {
            fetches[issuer.issuer] = self.fetchKeys(issuer: issuer.issuer)
        }
        self.state.withLockedValue { $0.startupFetches = fetches }
        self.settleStart(with: nil)
    }

    private func settleStart(with error: Error?) {
        let first = self.state.withLockedValue { state in
            defer { state.startSettled = true }
            return !state.startSettled
        }
        guard first else { return }
        if let error { self.started.fail(error) } else { self.started.succeed(()) }
    }

    /// Waits for `start()`, then for the start-up fetch of `issuer`'s keys: true when it
    /// succeeded, nil when there was none (the refresh service then schedules from there, so
    /// start-up fetches each `jwksURL` once).
    func startupKeyFetch(issuer: String) async throws -> Bool? {
        try await self.started.futureResult.get()
        guard let fetch = self.state.withLockedValue({ $0.startupFetches[issuer] }) else { return nil }
        return try await fetch.get()
    }

    /// Fetches one issuer's keys (after its discovery document, with discovery) through the
    /// first loop's clients; true when keys were fetched.
    func fetchKeys(issuer: String) -> EventLoopFuture<Bool> {
        let worker = self.workers[0]
        let keyStore = self.shared.keyStore
        return worker.eventLoop.flatSubmit {
            keyStore.fetch(issuer: issuer, on: worker.eventLoop) { url in worker.value.client(for: url) }
        }
    }

    /// SIGTERM/SIGINT: readiness turns 503, the main listener stops accepting, requests in
    /// flight finish (up to `drainSeconds`), then remaining connections are closed.
    public func drain() async {
        self.shared.health.startDraining()
        let (main, seconds) = self.state.withLockedValue { ($0.main, $0.configuration.timeouts.drainSeconds) }
        self.logger.info("gateway.draining", metadata: ["drain.seconds": "\(seconds)"])
        try? await main?.close()
        for worker in self.workers {
            worker.eventLoop.execute { worker.value.quiesceConnections() }
        }
        let deadline = NIODeadline.now() + .seconds(Int64(seconds))
        while NIODeadline.now() < deadline {
            if await self.openConnectionCount() == 0 { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        let remaining = await self.openConnectionCount()
        if remaining > 0 {
            self.logger.warning("gateway.drain_timeout", metadata: ["connections.closed": "\(remaining)"])
            for worker in self.workers {
                worker.eventLoop.execute { worker.value.closeAllConnections() }
            }
        }
    }

    /// Closes everything and stops the event loops. Idempotent.
    public func shutdown() async {
        let (main, admin, tasks, alreadyStopped) = self.state.withLockedValue { state in
            defer { state.stopped = true }
            return (state.main, state.admin, state.flushTasks, state.stopped)
        }
        guard !alreadyStopped else { return }
        self.settleStart(with: CancellationError())
        for task in tasks { task.cancel() }
        try? await main?.close()
        try? await admin?.close()
        for worker in self.workers {
            try? await worker.eventLoop.submit {
                worker.value.closeAllConnections()
                worker.value.accessLog.flush()
            }.get()
        }
        // Its client's connections live on the event loops.
        await self.shared.sharedState?.stop()
        try? await self.group.shutdownGracefully()
        self.logger.info("gateway.stopped")
    }

    func openConnectionCount() async -> Int {
        var total = 0
        for worker in self.workers {
            total += (try? await worker.eventLoop.submit { worker.value.openConnectionCount }.get()) ?? 0
        }
        return total
    }

    // MARK: Reload

    /// Adopts a new configuration (SIGHUP). Requests in flight finish with the old one.
    /// Listener addresses, TLS files and the thread count need a restart; a change there is
    /// reported and otherwise ignored.
    public func reload(_ configuration: GatewayConfiguration) {
        // Backend TLS is built before anything changes: if it cannot be, the old configuration stays.
        let backendTLS: [String: UpstreamTLS]
        do {
            backendTLS = try UpstreamTLS.backends(configuration)
        } catch {
            self.reloadFailed(error)
            return
        }
        let (old, generation, profiles, introspector, rateLimiter) = self.state.withLockedValue { state in
            let old = state.configuration
            state.generation += 1
            state.configuration = configuration
            state.profiles = Self.profileCache(for: configuration, keeping: state.profiles, shared: self.shared)
            state.introspector = Self.introspector(for: configuration, keeping: state.introspector, shared: self.shared)
            state.rateLimiter = RateLimiter.make(configuration: configuration, keeping: state.rateLimiter, syncsUsage: self.shared.sharedState != nil)
            self.shared.sharedState?.attachRateLimiter(state.rateLimiter)
            return (old, state.generation, state.profiles, state.introspector, state.rateLimiter)
        }
        if old.listener != configuration.listener || old.admin != configuration.admin || old.eventLoopThreads != configuration.eventLoopThreads
            || old.tracing != configuration.tracing
        {
            self.logger.warning("config.reload_needs_restart", metadata: ["reason": "listener, admin, eventLoopThreads or tracing changed; restart to apply them"])
        }
        if old.sharedState != configuration.sharedState {
            // The store (its connections, flights and outcomes) belongs to the application.
            self.logger.warning(
                "config.reload_needs_restart",
                metadata: ["reason": "sharedState changed; the running shared state (\(old.sharedState?.description ?? "off")) is kept until a restart"]
            )
        }
        let snapshot = Self.makeSnapshot(
            configuration, generation: generation, shared: self.shared, profiles: profiles, introspector: introspector, rateLimiter: rateLimiter,
            backendTLS: backendTLS
        )
        Self.warnAboutInsecureBackends(configuration, logger: self.logger)
        self.prober.apply(snapshot)
        for worker in self.workers {
            worker.eventLoop.execute { worker.value.apply(snapshot) }
        }
        self.shared.keyStore.update(configuration: configuration.tokens)
        for issuer in self.shared.keyStore.remoteIssuers where self.shared.keyStore.status.first(where: { $0.issuer == issuer.issuer })?.ageSeconds == nil {
            _ = self.fetchKeys(issuer: issuer.issuer)
        }
        self.shared.processMetrics.increment(.configReload(.success))
        self.logger.info("config.reloaded", metadata: ["config.generation": "\(generation)"])
    }

    /// Records a reload that failed validation; the old configuration stays.
    public func reloadFailed(_ error: Error) {
        self.shared.processMetrics.increment(.configReload(.failure))
        self.logger.error("config.reload_failed", metadata: ["error": "\(error)"])
    }

    // MARK: Building

    /// The refresher is rebuilt for each configuration; what it has learned lives in the
    /// application's refresh store, which every configuration shares.
    private static func makeSnapshot(
        _ configuration: GatewayConfiguration, generation: UInt64, shared: GatewayShared, profiles: ProfileCache?, introspector: TokenIntrospector?,
        rateLimiter: RateLimiter?, backendTLS: [String: UpstreamTLS]
    ) -> RuntimeSnapshot {
        let refresher = configuration.authService.flatMap { authService in
            authService.refresh.map {
                SessionRefresher(
                    configuration: $0, callTimeoutMilliseconds: authService.timeoutMilliseconds, store: shared.refreshStore,
                    metrics: shared.processMetrics, clock: shared.clock
                )
            }
        }
        return RuntimeSnapshot(
            configuration: configuration, generation: generation, refresher: refresher, profiles: profiles, introspector: introspector,
            rateLimiter: rateLimiter, backendTLS: backendTLS, backendAvailability: shared.backendAvailabilities.update(for: configuration)
        )
    }

    /// The introspector for `configuration`: the existing one (its cache) while
    /// `tokens.introspection` is unchanged, else a new one (or none).
    private static func introspector(for configuration: GatewayConfiguration, keeping existing: TokenIntrospector?, shared: GatewayShared) -> TokenIntrospector? {
        guard let introspection = configuration.tokens.introspection else { return nil }
        if let existing, existing.configuration == introspection { return existing }
        return TokenIntrospector(
            configuration: introspection, capacity: max(configuration.tokens.verifiedCacheEntries, 1000), metrics: shared.processMetrics,
            shared: shared.sharedState?.introspections, clock: shared.clock
        )
    }

    /// `tls.insecureSkipVerify` is loud: a warning per backend at every start and reload.
    static func warnAboutInsecureBackends(_ configuration: GatewayConfiguration, logger: Logger) {
        for backend in configuration.backends where backend.tls?.insecureSkipVerify == true {
            logger.warning(
                "backend.tls_verification_off",
                metadata: ["backend": "\(backend.name)", "reason": "tls.insecureSkipVerify is true: the backend's certificate is not verified"]
            )
        }
    }

    /// The profile cache for `configuration`: the existing one while the profile section is
    /// unchanged, else a new one (or none).
    private static func profileCache(for configuration: GatewayConfiguration, keeping existing: ProfileCache?, shared: GatewayShared) -> ProfileCache? {
        guard let profile = configuration.authService?.profile else { return nil }
        if let existing, existing.profileConfiguration == profile { return existing }
        return ProfileCache(configuration: profile, metrics: shared.processMetrics, clock: shared.clock)
    }

    /// The listener's TLS; ALPN offers `h2` and `http/1.1` while HTTP/2 is on (SPEC §4.9).
    private static func makeServerTLS(_ files: ListenerTLS, http2: Bool) throws -> NIOSSLContext {
        let certificates = try NIOSSLCertificate.fromPEMFile(files.certificatePEMFile)
        let key = try NIOSSLPrivateKey(file: files.privateKeyPEMFile, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
        return try NIOSSLContext(configuration: configuration)
    }

    private func worker(for eventLoop: EventLoop) -> Worker {
        // Called on `eventLoop` by the channel initializers; `value` checks that.
        self.workers.first { $0.eventLoop === eventLoop }!.value
    }

    private func bindMain(_ listener: ListenerConfiguration) async throws -> Channel {
        let workers = self.workers
        let tls = self.listenerTLS
        return try await ServerBootstrap(group: self.group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelInitializer { channel in
                do {
                    let worker = workers.first { $0.eventLoop === channel.eventLoop }!.value
                    try ClientPipeline.configure(channel: channel, worker: worker, tls: tls)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .bind(host: listener.host, port: listener.port)
            .get()
    }

    private func bindAdmin(_ listener: ListenerConfiguration) async throws -> Channel {
        let workers = self.workers
        let collector = self.metricsCollector
        return try await ServerBootstrap(group: self.group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                do {
                    let worker = workers.first { $0.eventLoop === channel.eventLoop }!.value
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(AdminHandler(worker: worker, metrics: collector))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .bind(host: listener.host, port: listener.port)
            .get()
    }
}

/// Hands new key snapshots to every event loop. Attached once the workers exist (the key
/// store is created before them).
private final class KeyPublisher: Sendable {
    private let workers = NIOLockedValueBox<[NIOLoopBound<Worker>]>([])

    func attach(_ workers: [NIOLoopBound<Worker>]) {
        self.workers.withLockedValue { $0 = workers }
    }

    func publish(_ snapshot: KeySnapshot) {
        for worker in self.workers.withLockedValue({ $0 }) {
            worker.eventLoop.execute { worker.value.apply(snapshot) }
        }
    }
}
