import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The gateway, built from a validated configuration: event loops with their workers, the
/// process-wide caches and coordinators, the listeners. Used by `auth-gateway serve`, by the
/// demo and by the tests (on `127.0.0.1:0`).
///
/// It owns the lifecycle (start, drain, shutdown) and delegates the rest: what the
/// configuration builds to `GatewayComposition`, the sockets to `GatewayListeners`, reloads to
/// `ConfigurationReloader`, the start-up key fetches to `KeyStartup`.
public final class GatewayApplication: Sendable {
    public let logger: Logger
    let shared: GatewayShared
    let workers: [NIOLoopBound<Worker>]
    let listeners: GatewayListeners
    let reloader: ConfigurationReloader
    let keyStartup: KeyStartup
    private let group: MultiThreadedEventLoopGroup
    private let state = NIOLockedValueBox<(flushTasks: [RepeatedTask], stopped: Bool)>(([], false))

    /// Background work the application needs beside `GatewayService` (the shared state's
    /// connections and jobs, the trace exporter, the active health checks of
    /// docs/forwarding.md): run them in the same service group, before `GatewayService`.
    public let backgroundServices: [any Service]

    /// Builds everything; listens only after `start()`. `logger` is the application's: every
    /// part of the gateway logs through it (or a logger derived from it).
    public static func make(
        configuration: GatewayConfiguration,
        logger: Logger,
        clock: @escaping @Sendable () -> Double = GatewayApplication.systemClock
    ) async throws -> GatewayApplication {
        try await Self.make(configuration: configuration, logger: logger, clock: clock, assembly: .standard)
    }

    /// `make`, with each worker's authentication pipeline built by `assembly` (a test's steps).
    package static func make(
        configuration: GatewayConfiguration, logger: Logger, clock: @escaping @Sendable () -> Double,
        assembly: AuthenticationAssembly
    ) async throws -> GatewayApplication {
        let threads = configuration.eventLoopThreads == 0 ? System.coreCount : configuration.eventLoopThreads
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        do {
            let application = try await GatewayApplication(
                configuration: configuration, logger: logger, clock: clock, group: group, assembly: assembly)
            FreedMemory.returnToSystem()  // what loading the configuration parsed and dropped
            return application
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private init(
        configuration: GatewayConfiguration, logger: Logger, clock: @escaping @Sendable () -> Double,
        group: MultiThreadedEventLoopGroup, assembly: AuthenticationAssembly
    ) async throws {
        self.logger = logger
        self.group = group
        let publisher = KeyPublisher()
        var tracing: GatewayTracing?
        var backgroundServices: [any Service] = []
        let processMetrics = ProcessMetrics()
        if let tracingConfiguration = configuration.tracing {
            let (made, exporter) = try GatewayTracing.make(
                tracingConfiguration, metrics: processMetrics, logger: logger)
            tracing = made
            backgroundServices.append(exporter)
        }
        let shared = try GatewayComposition.makeShared(
            configuration, clock: clock, logger: logger, connector: SocketConnector(), publisher: publisher,
            group: group, tracing: tracing,
            processMetrics: processMetrics
        )
        self.shared = shared
        if let sharedState = shared.sharedState {
            // First: the group shuts it down last (after `shutdown()` has ended its work).
            backgroundServices.insert(sharedState, at: 0)
        }
        let prober = HealthProber(shared: shared)
        backgroundServices.append(prober)
        self.backgroundServices = backgroundServices
        let listenerTLS = try configuration.listener.tls.map {
            try GatewayListeners.makeServerTLS($0, http2: configuration.listener.http2)
        }
        let parts = GatewayComposition.reloadableParts(for: configuration, keeping: nil, shared: shared)
        let snapshot = GatewayComposition.makeSnapshot(
            configuration, generation: 1, shared: shared, parts: parts,
            backendTLS: try UpstreamTLS.backends(configuration))
        var workers: [NIOLoopBound<Worker>] = []
        for eventLoop in group.makeIterator() {
            let worker = try await eventLoop.submit {
                NIOLoopBound(
                    Worker(eventLoop: eventLoop, shared: shared, snapshot: snapshot, assembly: assembly),
                    eventLoop: eventLoop)
            }.get()
            workers.append(worker)
        }
        self.workers = workers
        prober.attach(eventLoop: workers[0].eventLoop)
        prober.apply(snapshot)
        publisher.attach(workers)
        var loopStreams: [NIOLoopBound<LoopStreams>] = []
        for worker in workers {
            loopStreams.append(
                try await worker.eventLoop.submit { NIOLoopBound(worker.value.streams, eventLoop: worker.eventLoop) }
                    .get())
        }
        shared.streams.attach(loopStreams)
        self.listeners = GatewayListeners(
            group: group, workers: workers, tls: listenerTLS,
            metrics: MetricsCollector(workers: workers, shared: shared))
        self.keyStartup = KeyStartup(keyStore: shared.keyStore, worker: workers[0])
        self.reloader = ConfigurationReloader(
            configuration: configuration, parts: parts, shared: shared, workers: workers, prober: prober,
            keys: self.keyStartup, logger: logger
        )
    }

    /// Unix time in seconds.
    public static let systemClock: @Sendable () -> Double = GatewayShared.systemClock

    public var configuration: GatewayConfiguration { self.reloader.configuration }

    /// Where the main listener is bound (its port is real even when configured as 0).
    public var mainAddress: SocketAddress? { self.listeners.mainAddress }
    public var adminAddress: SocketAddress? { self.listeners.adminAddress }

    public var isReady: Bool { HealthEndpoints.readiness(self.shared).0 }

    // MARK: Lifecycle

    /// Binds the listeners and starts fetching remote keys (readiness waits for them).
    public func start() async throws {
        let configuration = self.configuration
        do {
            try await self.listeners.bind(main: configuration.listener, admin: configuration.admin)
        } catch {
            self.keyStartup.settle(with: error)
            throw error
        }
        var tasks: [RepeatedTask] = []
        for worker in self.workers {
            tasks.append(
                worker.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                    worker.value.accessLog.flush()
                })
        }
        self.state.withLockedValue { $0.flushTasks = tasks }
        self.shared.health.markConfigActive()
        GatewayComposition.warnAboutInsecureBackends(configuration, logger: self.logger)
        self.logger.info(
            "gateway.listening",
            metadata: [
                "listener.address": "\(self.mainAddress?.description ?? "?")",
                "admin.address": "\(self.adminAddress?.description ?? "off")",
                "event_loops": "\(self.workers.count)",
            ]
        )
        self.keyStartup.begin()
    }

    /// Waits for `start()`, then for the start-up fetch of `issuer`'s keys (`KeyStartup`).
    func startupKeyFetch(issuer: String) async throws -> Bool? {
        try await self.keyStartup.startupFetch(issuer: issuer)
    }

    /// Fetches one issuer's keys through the first loop's clients; true when keys were fetched.
    func fetchKeys(issuer: String) -> EventLoopFuture<Bool> {
        self.keyStartup.fetch(issuer: issuer)
    }

    /// SIGTERM/SIGINT: readiness turns 503, the main listener stops accepting, requests in
    /// flight finish (up to `drainSeconds`), then remaining connections are closed.
    public func drain() async {
        self.shared.health.startDraining()
        let seconds = self.configuration.timeouts.drainSeconds
        self.logger.info("gateway.draining", metadata: ["drain.seconds": "\(seconds)"])
        await self.listeners.closeMain()
        for worker in self.workers {
            worker.eventLoop.execute { worker.value.connections.quiesce() }
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
                worker.eventLoop.execute { worker.value.connections.closeAll() }
            }
        }
    }

    /// Closes everything and stops the event loops. Idempotent.
    public func shutdown() async {
        let (tasks, alreadyStopped) = self.state.withLockedValue { state in
            defer { state.stopped = true }
            return (state.flushTasks, state.stopped)
        }
        guard !alreadyStopped else { return }
        self.keyStartup.settle(with: CancellationError())
        for task in tasks { task.cancel() }
        await self.listeners.closeAll()
        for worker in self.workers {
            try? await worker.eventLoop.submit {
                worker.value.connections.closeAll()
                worker.value.accessLog.flush()
            }.get()
        }
        // Its client's connections live on the event loops: its work ends here, its service
        // when the group shuts down.
        await self.shared.sharedState?.shutdown()
        try? await self.group.shutdownGracefully()
        self.logger.info("gateway.stopped")
    }

    func openConnectionCount() async -> Int {
        var total = 0
        for worker in self.workers {
            total += (try? await worker.eventLoop.submit { worker.value.connections.openCount }.get()) ?? 0
        }
        return total
    }

    // MARK: Reload

    /// Adopts a new configuration (SIGHUP); see `ConfigurationReloader`.
    public func reload(_ configuration: GatewayConfiguration) {
        self.reloader.reload(configuration)
    }

    /// Records a reload that failed validation; the old configuration stays.
    public func reloadFailed(_ error: Error) {
        self.reloader.reloadFailed(error)
    }
}

/// Named, never reflected: it holds every key and secret the gateway uses
/// (docs/operations.md, "What is never logged").
extension GatewayApplication: CustomStringConvertible, CustomReflectable {
    public var description: String { "GatewayApplication" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}
