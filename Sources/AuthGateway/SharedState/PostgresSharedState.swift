import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// Everything `sharedState.postgres` runs (docs/shared-state.md): the stores the requests use
/// (refreshes, DPoP proofs, introspection answers, browser sessions) and, as a `Service` of
/// the application's service group, the work behind them — the client's pool, the LISTEN
/// connection that wakes waiters and drops ended sessions, the maintenance loop that creates
/// the tables, probes a failed database with
/// backoff and sweeps expired rows, the rate-limit sync, and the jobs the requests queue
/// (`SharedStateJobs`; a request never starts a task).
///
/// Owned by the application, like the process-local store: a reload keeps the connections,
/// the flights in flight and the outcomes. `run()` works until `shutdown()` — which the
/// application calls before its event loops stop, as the connections live there — or until the
/// service group shuts down; then it waits for the group, as a service that returned early
/// would end it. Nothing outlives the application in `serve`, the demo or the tests.
final class PostgresSharedState: Service, Sendable {
    let configuration: SharedStateConfiguration
    let database: SharedStateDatabase
    let wakeups = RefreshWakeups()
    let store: PostgresRefreshStore
    /// Token exchanges across instances (docs/token-exchange.md).
    let exchanges: PostgresExchangeStore
    let eventLoopGroup: EventLoopGroup
    private let metrics: ProcessMetrics
    let logger: Logger
    /// When `run()` works, and `shutdown()`'s wait for it.
    private let lifecycle = SharedStateLifecycle()
    /// The limiter the rate-limit sync works on (`attachRateLimiter`).
    let rateLimiter = NIOLockedValueBox<RateLimiter?>(nil)
    /// The jobs requests queue for refresh flights, DPoP proofs and introspection answers.
    let jobs = SharedStateJobs()
    /// Whether the DPoP-proof and introspection tables exist (the maintenance loop makes them).
    let tokenTables = TokenTablesReadiness()
    /// The DPoP replay check across instances (docs/authentication.md).
    let dpopReplay: PostgresDPoPReplay
    /// Introspection answers across instances (docs/authentication.md).
    let introspections: PostgresIntrospections
    /// Browser sessions across instances (docs/browser-sign-in.md).
    let sessions: PostgresSessionStore

    /// `pollMillisecondsWhileListening`: the waiters' safety-net poll while notifications
    /// work (tests lengthen it to show that notifications alone wake them).
    init(
        configuration: SharedStateConfiguration, eventLoopGroup: EventLoopGroup, metrics: ProcessMetrics,
        logger: Logger,
        pollMillisecondsWhileListening: Int64 = 250, sessionCapacity: Int = 100_000,
        clock: @escaping @Sendable () -> Double, sessionObserver: SessionObserver? = nil
    ) throws {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.metrics = metrics
        self.logger = logger
        self.database = try SharedStateDatabase(
            settings: configuration.postgres, eventLoopGroup: eventLoopGroup, metrics: metrics, logger: logger)
        let sealer = OutcomeSealer(key: configuration.encryptionKey)
        self.dpopReplay = PostgresDPoPReplay(database: self.database, jobs: self.jobs, tablesReady: self.tokenTables)
        self.introspections = PostgresIntrospections(
            database: self.database, jobs: self.jobs, tablesReady: self.tokenTables, sealer: sealer)
        self.sessions = PostgresSessionStore(
            capacity: sessionCapacity, database: self.database, jobs: self.jobs, key: configuration.encryptionKey,
            clock: clock, observer: sessionObserver)
        self.store = PostgresRefreshStore(
            database: self.database, wakeups: self.wakeups, jobs: self.jobs, sealer: sealer,
            pollMillisecondsWhileListening: pollMillisecondsWhileListening, clock: clock
        )
        self.exchanges = PostgresExchangeStore(
            database: self.database, wakeups: self.wakeups, jobs: self.jobs, sealer: sealer,
            pollMillisecondsWhileListening: pollMillisecondsWhileListening, clock: clock)
    }

    // MARK: Service

    func run() async throws {
        if self.lifecycle.begin() {
            self.logger.info(
                "shared_state.starting",
                metadata: [
                    "shared_state.database": "\(self.configuration.postgres.url)",
                    "shared_state.tls": "\(self.configuration.postgres.tls.rawValue)",
                ]
            )
            await withTaskCancellationOrGracefulShutdownHandler {
                await self.work()
            } onCancelOrGracefulShutdown: {
                self.lifecycle.requestStop()
            }
        }
        // Stopped by `shutdown()` while the group runs (the gateway's own shutdown): wait for
        // the group's graceful shutdown. At once when that (or cancellation) is what stopped it.
        try? await gracefulShutdown()
    }

    /// The background work and the requests' jobs, until a stop is requested. Then no job is
    /// accepted, and everything is cancelled: a flight answers from its own call or
    /// "unavailable", a DPoP proof or an introspection falls back to the process-local check.
    private func work() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.database.client.run() }
            group.addTask { await self.listen() }
            group.addTask { await self.maintain() }
            group.addTask { await self.syncRateLimits() }
            group.addTask { await self.jobs.run { await self.perform($0) } }
            await self.lifecycle.untilStopRequested()
            self.jobs.finish()
            group.cancelAll()
            // So that no waiter sits out its poll interval.
            self.wakeups.wakeAll()
        }
        self.wakeups.setListening(false)
        self.lifecycle.finish()
    }

    /// Runs one job a request queued.
    private func perform(_ job: SharedStateJob) async {
        switch job {
        case .refresh(let refresh):
            await self.store.run(refresh)
        case .exchange(let exchange):
            await self.exchanges.run(exchange)
        case .recordDPoPProof(let digest, let keepMilliseconds, let firstUse):
            await self.dpopReplay.record(digest, keepMilliseconds: keepMilliseconds, firstUse: firstUse)
        case .introspection(let introspection):
            await self.introspections.run(introspection)
        case .sessionRead(let read):
            await self.sessions.run(read)
        case .sessionRefresh(let digest):
            await self.sessions.refreshHeld(digest)
        case .sessionWrites:
            await self.sessions.flush()
        case .sessionResync:
            await self.sessions.resynchronize()
        }
    }

    /// Ends the work and waits for it, connections closed: from the application's
    /// `shutdown()`, before the event loops stop. Idempotent; requests after it do without the
    /// database.
    func shutdown() async {
        self.lifecycle.requestStop()
        self.jobs.finish()
        await self.lifecycle.stopped()
    }

    // MARK: Health

    /// `checks.sharedState` of `/healthz`; never shows the password.
    var health: (degraded: Bool, detail: JSONObject) {
        let availability = self.database.availabilitySnapshot
        let listening = self.wakeups.isListening
        var detail: JSONObject = [
            "database": .string(self.configuration.postgres.url.description),
            "tls": .string(self.configuration.postgres.tls.rawValue),
            "connection": .string(
                availability.status == .up ? "ok" : (availability.lastFailure == nil ? "starting" : "failing")),
            "notifications": .string(listening ? "listening" : "polling"),
        ]
        if availability.status != .up {
            detail["fallback"] = "process-local refresh table"
            if availability.consecutiveFailures > 0 {
                detail["consecutiveFailures"] = .number(JSONNumber(availability.consecutiveFailures))
            }
        }
        if let failure = availability.lastFailure, availability.status != .up || !listening {
            detail["lastError"] = .string("\(failure.operation.rawValue): \(failure.reason)")
        }
        // The DPoP-proof and introspection tables: created after the database is up; until
        // then (or while the role may not create them) those stay process-local.
        let tokenTables = self.tokenTables.isReady
        detail["tokenTables"] = .string(tokenTables ? "ok" : "missing")
        // The sessions table: without it browser sessions stay per instance, which matters
        // only while the configuration signs browsers in.
        let sessionTable = self.sessions.table.isReady
        detail["sessionTable"] = .string(sessionTable ? "ok" : "missing")
        let sessionsDegraded = !sessionTable && self.sessions.lifetime != nil
        let degraded = availability.status != .up || !listening || !tokenTables || sessionsDegraded
        detail["status"] = .string(degraded ? "degraded" : "ok")
        return (degraded, detail)
    }
}

/// The database without its password (`PostgresURL`), never the state key nor the sealers
/// derived from it: swift-service-lifecycle describes every service at `debug` level
/// (docs/operations.md, "What is never logged").
extension PostgresSharedState: CustomStringConvertible, CustomReflectable {
    var description: String { "PostgresSharedState(\(self.configuration))" }
    var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}
