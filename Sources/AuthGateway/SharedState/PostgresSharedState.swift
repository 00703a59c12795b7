import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// Everything `sharedState.postgres` runs (SPEC §4.8): the refresh store the requests use,
/// and the background work — the client's pool, the LISTEN connection that wakes waiters,
/// and the maintenance loop that creates the table, probes a failed database with backoff
/// and sweeps expired rows.
///
/// Owned by the application, like the process-local store: a reload keeps the connections,
/// the flights in flight and the outcomes. `start()` begins the background work (from
/// `GatewayApplication.start()`), `stop()` ends it and every flight (from `shutdown()`, before
/// the event loops stop), so nothing outlives the application in `serve`, the demo or the
/// tests.
final class PostgresSharedState: Sendable {
    let configuration: SharedStateConfiguration
    let database: SharedStateDatabase
    let wakeups = RefreshWakeups()
    let store: PostgresRefreshStore
    let eventLoopGroup: EventLoopGroup
    private let metrics: ProcessMetrics
    let logger: Logger
    private let background = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// The limiter the rate-limit sync works on (`attachRateLimiter`).
    let rateLimiter = NIOLockedValueBox<RateLimiter?>(nil)
    /// The tasks requests start for DPoP proofs and introspection answers.
    let requestTasks = SharedStateTasks()
    /// Whether the DPoP-proof and introspection tables exist (the maintenance loop makes them).
    let tokenTables = TokenTablesReadiness()
    /// The DPoP replay check across instances (SPEC §4.14).
    let dpopReplay: SharedDPoPReplay
    /// Introspection answers across instances (SPEC §4.13).
    let introspections: SharedIntrospections

    /// `pollMillisecondsWhileListening`: the waiters' safety-net poll while notifications
    /// work (tests lengthen it to show that notifications alone wake them).
    init(
        configuration: SharedStateConfiguration, eventLoopGroup: EventLoopGroup, metrics: ProcessMetrics,
        logger: Logger,
        pollMillisecondsWhileListening: Int64 = 250, clock: @escaping @Sendable () -> Double
    ) throws {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.metrics = metrics
        self.logger = logger
        self.database = try SharedStateDatabase(
            settings: configuration.postgres, eventLoopGroup: eventLoopGroup, metrics: metrics, logger: logger)
        let sealer = OutcomeSealer(key: configuration.encryptionKey)
        self.dpopReplay = SharedDPoPReplay(
            database: self.database, tasks: self.requestTasks, tablesReady: self.tokenTables)
        self.introspections = SharedIntrospections(
            database: self.database, tasks: self.requestTasks, tablesReady: self.tokenTables, sealer: sealer)
        self.store = PostgresRefreshStore(
            database: self.database, wakeups: self.wakeups, sealer: sealer,
            pollMillisecondsWhileListening: pollMillisecondsWhileListening, clock: clock
        )
    }

    func start() {
        self.logger.info(
            "shared_state.starting",
            metadata: [
                "shared_state.database": "\(self.configuration.postgres.url)",
                "shared_state.tls": "\(self.configuration.postgres.tls.rawValue)",
            ]
        )
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.database.client.run() }
                group.addTask { await self.listen() }
                group.addTask { await self.maintain() }
                group.addTask { await self.syncRateLimits() }
                await group.waitForAll()
            }
        }
        self.background.withLockedValue { $0 = task }
    }

    /// Ends the flights (each answers from its own call or "unavailable"), then the
    /// background work and the client. Idempotent.
    func stop() async {
        await self.store.stop()
        await self.requestTasks.stop()
        guard
            let task = self.background.withLockedValue({ state -> Task<Void, Never>? in
                defer { state = nil }
                return state
            })
        else { return }
        task.cancel()
        await task.value
        self.wakeups.setListening(false)
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
        let degraded = availability.status != .up || !listening || !tokenTables
        detail["status"] = .string(degraded ? "degraded" : "ok")
        return (degraded, detail)
    }
}
