import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Builds shared states (as one gateway instance each) on a test database, in this process.
enum SharedStateTesting {
    static let key = SharedStateConfiguration.EncryptionKey(bytes: (0..<32).map { UInt8($0) })!
    static let keyBase64 = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    static func configuration(
        cluster: PostgresCluster, database: String, host: String = "127.0.0.1", port: Int? = nil,
        password: String = PostgresCluster.gatewayPassword,
        tls: PostgresTLSMode = .disable, caFile: String? = nil, timeoutMilliseconds: Int = 10_000
    ) throws -> SharedStateConfiguration {
        let text = "postgres://\(PostgresCluster.gatewayRole):\(password)@\(host):\(port ?? cluster.port)/\(database)"
        return SharedStateConfiguration(
            postgres: PostgresSettings(
                url: try PostgresURL.parse(text).get(), tls: tls, caCertificatePEMFile: caFile,
                timeoutMilliseconds: timeoutMilliseconds),
            encryptionKey: Self.key,
            sweepIntervalSeconds: 60
        )
    }

    /// A shared state whose service runs (as in the application's service group); waits
    /// (bounded) until refreshes use the database, unless `waitUntilUp` is false. End it with
    /// `stop()`.
    static func start(
        _ configuration: SharedStateConfiguration, logs: LogCapture? = nil, metrics: ProcessMetrics = ProcessMetrics(),
        waitUntilUp: Bool = true,
        pollMillisecondsWhileListening: Int64 = 250,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) async throws -> PostgresSharedState {
        var logger = Logger(label: "shared-state-test") { label in logs ?? LogCapture() }
        logger.logLevel = .info
        let state = try PostgresSharedState(
            configuration: configuration, eventLoopGroup: TestGroup.shared, metrics: metrics, logger: logger,
            pollMillisecondsWhileListening: pollMillisecondsWhileListening, clock: clock
        )
        Self.services.withLockedValue { $0[ObjectIdentifier(state)] = Task { try? await state.run() } }
        if waitUntilUp {
            try await Self.eventually("the shared state connects") {
                state.database.usesDatabase && state.wakeups.isListening
            }
        }
        return state
    }

    /// The service tasks of the shared states `start` made, by state.
    static let services = NIOLockedValueBox<[ObjectIdentifier: Task<Void, Never>]>([:])

    /// Polls `condition` every 20 ms for up to `seconds` (as generous as `eventually`: it only
    /// lengthens a failing test).
    static func eventually(
        _ what: String, seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
        throw TestClientError.timeout
    }
}

extension ProcessMetrics {
    /// `auth_gateway_shared_state_errors_total{operation}` so far.
    func sharedStateErrors(_ operation: SharedStateOperation) -> UInt64 {
        self.snapshot.counters[MetricKey(MetricName.sharedStateErrors, ["operation": operation.rawValue])] ?? 0
    }
}

/// Keeps every log line (message and metadata) a logger wrote.
final class LogCapture: LogHandler, @unchecked Sendable {
    private let lines = NIOLockedValueBox<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.MetadataValue? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = self.metadata.merging(event.metadata ?? [:]) { $1 }
        self.lines.withLockedValue { $0.append("\(event.level) \(event.message) \(merged)") }
    }

    var text: String { self.lines.withLockedValue { $0.joined(separator: "\n") } }
}

/// An auth-service call a test controls: counts calls, answers after a delay.
final class CountingCall: Sendable {
    private let count = NIOLockedValueBox(0)
    private let answer: NIOLockedValueBox<RefreshOutcome>
    let delay: TimeAmount

    init(answer: RefreshOutcome, delay: TimeAmount = .zero) {
        self.answer = NIOLockedValueBox(answer)
        self.delay = delay
    }

    var calls: Int { self.count.withLockedValue { $0 } }
    func answer(with outcome: RefreshOutcome) { self.answer.withLockedValue { $0 = outcome } }

    func make(on eventLoop: EventLoop) -> EventLoopFuture<RefreshOutcome> {
        eventLoop.assertInEventLoop()
        self.count.withLockedValue { $0 += 1 }
        let outcome = self.answer.withLockedValue { $0 }
        return eventLoop.scheduleTask(in: self.delay) { outcome }.futureResult
    }
}

extension PostgresSharedState {
    /// Ends the shared state as the gateway's shutdown does, then its service (as the service
    /// group's cancellation would). Idempotent.
    func stop() async {
        await self.shutdown()
        let service = SharedStateTesting.services.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(self)) }
        service?.cancel()
        await service?.value
    }

    /// The refresh of `digest` as a request on `eventLoop` makes it.
    func refresh(
        _ digest: TokenDigest, grace: Int = 30, callTimeoutMilliseconds: Int = 1000, on eventLoop: EventLoop,
        call: CountingCall
    ) async throws -> (RefreshOutcome, SingleFlightRole) {
        try await eventLoop.flatSubmit {
            self.store.outcome(
                for: digest, graceSeconds: grace, callTimeoutMilliseconds: callTimeoutMilliseconds,
                now: Date().timeIntervalSince1970, eventLoop: eventLoop,
                joined: {}
            ) {
                call.make(on: eventLoop)
            }
        }.get()
    }
}
