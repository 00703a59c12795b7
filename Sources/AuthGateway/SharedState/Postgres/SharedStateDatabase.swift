import Synchronization
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

/// The shared-state database as the refresh store and the maintenance loops use it: the
/// statements of `SharedRefreshTable` through a `PostgresClient` (its pool), each bounded by
/// `postgres.timeoutMilliseconds`, every failure counted
/// (`auth_gateway_shared_state_errors_total{operation}`) and fed to `DatabaseAvailability`,
/// which decides whether refreshes use the database at all.
final class SharedStateDatabase: Sendable {
    let settings: PostgresSettings
    let client: PostgresClient
    /// For the connections made outside the pool: the probe's and the LISTEN connection.
    let connectionConfiguration: PostgresConnection.Configuration
    private let eventLoopGroup: EventLoopGroup
    private let metrics: ProcessMetrics
    private let logger: Logger
    /// The application's logger made silent, for PostgresNIO: it logs queries at debug level
    /// with their binds, and nothing of that is wanted.
    let silent: Logger
    private let availability: NIOLockedValueBox<DatabaseAvailability>
    /// `availability.usesDatabase`, readable without the lock: requests ask on every
    /// statement they might make (a DPoP proof's jti, an introspection), and a lock shared by
    /// every loop would be on their path. Written under the lock whenever availability changes.
    private let usesDatabaseNow = Atomic<Bool>(false)

    init(settings: PostgresSettings, eventLoopGroup: EventLoopGroup, metrics: ProcessMetrics, logger: Logger) throws {
        self.settings = settings
        self.eventLoopGroup = eventLoopGroup
        self.metrics = metrics
        self.logger = logger
        var silent = logger
        silent.handler = SwiftLogNoOpLogHandler()
        self.silent = silent
        self.client = PostgresClient(
            configuration: try Self.clientConfiguration(settings), eventLoopGroup: eventLoopGroup)
        self.connectionConfiguration = try Self.connectionConfiguration(settings)
        self.availability = NIOLockedValueBox(DatabaseAvailability(now: Self.monotonicSeconds()))
        metrics.setGauge(.sharedStateUp, 0)
    }

    // MARK: Availability

    /// False while starting or after a failure, until a probe succeeds: refreshes then use the
    /// process-local table at once instead of waiting for a timeout.
    var usesDatabase: Bool { self.usesDatabaseNow.load(ordering: .relaxed) }

    var availabilitySnapshot: DatabaseAvailability { self.availability.withLockedValue { $0 } }

    func isProbeDue() -> Bool { self.availability.withLockedValue { $0.isProbeDue(now: Self.monotonicSeconds()) } }

    /// Seconds until the next probe is due (0 when due or up).
    func secondsUntilProbe() -> Double {
        self.availability.withLockedValue { max(0, $0.probeAt - Self.monotonicSeconds()) }
    }

    /// Counts `failure`, logs the start of an outage, and stops refreshes from using the
    /// database until a probe succeeds — except for the failures that do not mean the
    /// database is unusable for refreshes: a stored outcome this instance's key cannot open,
    /// the LISTEN connection (waiters poll instead; its loop probes the database to find out
    /// whether it is down) and a sweep (a slow `DELETE` must not turn single flight off).
    func record(_ failure: SharedStateFailure) {
        self.metrics.increment(.sharedStateError(operation: failure.operation.rawValue))
        switch failure.operation {
        case .decrypt:
            // The database works; this instance's key does not match the one that sealed it.
            self.logger.error("shared_state.decrypt_failed", metadata: ["shared_state.error": "\(failure.reason)"])
            return
        case .listen, .sweep, .rateLimitSync, .tokenTables, .sessionTable:
            // A rate-limit sync failing alone (its table missing for a role without CREATE, a
            // slow batch) must not turn refresh sharing off; a database that is down is found
            // by the probe the LISTEN loop and the refreshes run.
            self.logger.warning(
                "shared_state.\(failure.operation.rawValue)_failed",
                metadata: ["shared_state.error": "\(failure.reason)"]
            )
            return
        case .connect, .schema, .claim, .wait, .settle, .dpopReplay, .introspection, .sessionRead, .sessionWrite:
            // A request's statement that failed or timed out: the database is slow or down,
            // so requests stop waiting for it until a probe succeeds.
            break
        }
        let (startedOutage, failures) = self.availability.withLockedValue { state in
            let started = state.failed(failure, now: Self.monotonicSeconds())
            self.usesDatabaseNow.store(state.usesDatabase, ordering: .relaxed)
            return (started, state.consecutiveFailures)
        }
        self.metrics.setGauge(.sharedStateUp, 0)
        if startedOutage || failures == 1 {
            self.logger.warning(
                "shared_state.unavailable",
                metadata: [
                    "shared_state.operation": "\(failure.operation.rawValue)",
                    "shared_state.error": "\(failure.reason)",
                    "shared_state.fallback": "process-local refresh table",
                ]
            )
        }
    }

    private func recordSuccess() {
        let recovered = self.availability.withLockedValue { state in
            let recovered = state.succeeded(now: Self.monotonicSeconds())
            self.usesDatabaseNow.store(state.usesDatabase, ordering: .relaxed)
            return recovered
        }
        if recovered {
            self.metrics.setGauge(.sharedStateUp, 1)
            self.logger.notice("shared_state.available", metadata: ["shared_state.database": "\(self.settings.url)"])
        }
    }

    // MARK: Statements

    /// At start and after a failure: connects on a connection of its own (the pool retries
    /// quietly, so its error would only be a timeout), then creates the table if missing (a
    /// database restored from scratch gets its table back). A success puts the database back
    /// in use.
    func probe() async throws(SharedStateFailure) {
        let configuration = self.connectionConfiguration
        let eventLoop = self.eventLoopGroup.any()
        try await self.run(.connect, countsAsSuccess: false) { _ in
            let connection = try await PostgresConnection.connect(
                on: eventLoop, configuration: configuration, id: 0, logger: self.silent)
            try await connection.close()
        }
        try await self.ensureSchema()
    }

    func ensureSchema() async throws(SharedStateFailure) {
        try await self.run(.schema) { client in
            try await client.withTransaction(logger: self.silent) { connection in
                for try await _ in try await connection.query(SharedRefreshTable.schemaLock, logger: self.silent) {}
                var existing = (table: false, index: false)
                for try await row in try await connection.query(SharedRefreshTable.existingSchema, logger: self.silent)
                    .decode((Bool, Bool).self)
                {
                    existing = row
                }
                if !existing.table {
                    for try await _ in try await connection.query(SharedRefreshTable.createTable, logger: self.silent) {
                    }
                }
                if !existing.index {
                    for try await _ in try await connection.query(SharedRefreshTable.createIndex, logger: self.silent) {
                    }
                }
            }
        }
    }

    func claim(
        _ digest: TokenDigest, claimant: UUID, leaseMilliseconds: Int64
    ) async throws(SharedStateFailure) -> SharedRefreshRow? {
        try await self.run(.claim) { client in
            try await Self.firstRow(
                client.query(
                    SharedRefreshTable.claim(digest, claimant: claimant, leaseMilliseconds: leaseMilliseconds),
                    logger: self.silent))
        }
    }

    func read(_ digest: TokenDigest) async throws(SharedStateFailure) -> SharedRefreshRow? {
        try await self.run(.wait) { client in
            try await Self.firstRow(client.query(SharedRefreshTable.read(digest), logger: self.silent))
        }
    }

    /// True when this outcome was stored; false when another was stored first.
    func settle(
        _ digest: TokenDigest, claimant: UUID, sealedOutcome: [UInt8], keepMilliseconds: Int64
    ) async throws(SharedStateFailure) -> Bool {
        try await self.run(.settle) { client in
            var stored = false
            let rows = try await client.query(
                SharedRefreshTable.settle(
                    digest, claimant: claimant, sealedOutcome: sealedOutcome, keepMilliseconds: keepMilliseconds),
                logger: self.silent
            )
            for try await _ in rows { stored = true }
            return stored
        }
    }

    func sweep() async throws(SharedStateFailure) {
        try await self.run(.sweep) { client in
            // The pooled connection goes back when the rows are consumed.
            for try await _ in try await client.query(SharedRefreshTable.sweep, logger: self.silent) {}
        }
    }

    private static func firstRow(_ rows: PostgresRowSequence) async throws -> SharedRefreshRow? {
        var first: SharedRefreshRow?
        for try await (claimant, sealed, remaining) in rows.decode((UUID, ByteBuffer?, Int64).self) where first == nil {
            first = SharedRefreshRow(
                claimant: claimant, sealedOutcome: sealed.map { Array($0.readableBytesView) },
                remainingMilliseconds: remaining)
        }
        return first
    }

    /// Runs `body` bounded by the configured timeout; on a timeout the statement's task is
    /// cancelled and left to finish on its own (the pool closes or reuses its connection).
    func run<Result: Sendable>(
        _ operation: SharedStateOperation, countsAsSuccess: Bool = true,
        _ body: @escaping @Sendable (PostgresClient) async throws -> Result
    ) async throws(SharedStateFailure) -> Result {
        let client = self.client
        let timeout = self.settings.timeoutMilliseconds
        do {
            let result = try await Self.bounded(milliseconds: timeout, on: self.eventLoopGroup.any()) {
                try await body(client)
            }
            if countsAsSuccess { self.recordSuccess() }
            return result
        } catch {
            let failure = SharedStateFailure(
                operation: operation, reason: Self.describe(error, timeoutMilliseconds: timeout))
            if !(error is CancellationError) { self.record(failure) }
            throw failure
        }
    }

    struct TimedOut: Error {}

    /// `body`'s result, or `TimedOut` after `milliseconds` — without waiting for a body that
    /// ignores cancellation (a statement already sent cannot be called back).
    static func bounded<Result: Sendable>(
        milliseconds: Int, on eventLoop: EventLoop, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let promise = eventLoop.makePromise(of: Result.self)
        let work = Task {
            do { promise.succeed(try await body()) } catch { promise.fail(error) }
        }
        let timer = eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
            promise.fail(TimedOut())
            work.cancel()
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
            work.cancel()
        }
    }

    /// What went wrong, without secrets: PostgresNIO's errors print a fixed text on purpose;
    /// the server's message (e.g. "password authentication failed for user …") and the
    /// connection error are taken from them explicitly.
    static func describe(_ error: Error, timeoutMilliseconds: Int) -> String {
        if error is TimedOut { return "no answer within \(timeoutMilliseconds) ms" }
        if let error = error as? PostgresTransactionError {
            // Its own description prints the statements with their bound values.
            let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
            return inner.map { Self.describe($0, timeoutMilliseconds: timeoutMilliseconds) } ?? "transaction failed"
        }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return "\(message)\(state)"
            }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        if let error = error as? PostgresDecodingError { return "unexpected row: \(error.code)" }
        return "\(error)"
    }

    // MARK: Configuration

    static func clientConfiguration(_ settings: PostgresSettings) throws -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch try Self.tlsConfiguration(settings) {
        case .none: tls = .disable
        case .some(let configuration): tls = .require(configuration)
        }
        var configuration = PostgresClient.Configuration(
            host: settings.url.host, port: settings.url.port, username: settings.url.username,
            password: settings.url.password?.value, database: settings.url.database, tls: tls
        )
        // One warm connection, so a refresh does not pay for connecting; refreshes are rare,
        // a few connections serve any burst.
        configuration.options.additionalStartupParameters = [("application_name", Self.applicationName)]
        configuration.options.minimumConnections = 1
        configuration.options.maximumConnections = 4
        configuration.options.connectTimeout = .milliseconds(Int64(max(settings.timeoutMilliseconds, 2000)))
        return configuration
    }

    /// The configuration of the dedicated LISTEN connection.
    static func connectionConfiguration(_ settings: PostgresSettings) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        switch try Self.tlsConfiguration(settings) {
        case .none: tls = .disable
        case .some(let configuration): tls = .require(try NIOSSLContext(configuration: configuration))
        }
        var configuration = PostgresConnection.Configuration(
            host: settings.url.host, port: settings.url.port, username: settings.url.username,
            password: settings.url.password?.value, database: settings.url.database, tls: tls
        )
        configuration.options.connectTimeout = .milliseconds(Int64(max(settings.timeoutMilliseconds, 2000)))
        configuration.options.additionalStartupParameters = [("application_name", Self.applicationName)]
        return configuration
    }

    /// What `pg_stat_activity.application_name` shows for the gateway's connections.
    static let applicationName = "auth-gateway"

    /// nil for `disable`; `require` encrypts without checking the certificate (libpq's
    /// `sslmode=require`); `verify-full` checks the chain (against the CA file when given)
    /// and the host name — or, for an IP address in the URL, the certificate's IP SAN.
    static func tlsConfiguration(_ settings: PostgresSettings) throws -> TLSConfiguration? {
        switch settings.tls {
        case .disable:
            return nil
        case .require:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            return configuration
        case .verifyFull:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .fullVerification
            if let caFile = settings.caCertificatePEMFile {
                configuration.trustRoots = .file(caFile)
            }
            return configuration
        }
    }

    static func monotonicSeconds() -> Double { Double(NIODeadline.now().uptimeNanoseconds) / 1e9 }
}
