import Logging
import NIOCore

@testable import AuthGateway

/// The library makes no logger of its own (the application passes one in); tests that do not
/// look at logs build their gateways and key stores with this default one.
enum TestLoggers {
    static let standard = Logger(label: "auth-gateway")
}

extension GatewayApplication {
    static func make(
        configuration: GatewayConfiguration, clock: @escaping @Sendable () -> Double = GatewayApplication.systemClock
    ) async throws -> GatewayApplication {
        try await Self.make(configuration: configuration, logger: TestLoggers.standard, clock: clock)
    }

    static func makeWorker(
        configuration: GatewayConfiguration, eventLoop: EventLoop, clock: @escaping @Sendable () -> Double,
        connector: UpstreamConnector
    ) throws -> Worker {
        try Self.makeWorker(
            configuration: configuration, eventLoop: eventLoop, clock: clock, connector: connector,
            logger: TestLoggers.standard)
    }
}

extension KeyStore {
    convenience init(
        configuration: TokensConfiguration, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double,
        publish: @escaping @Sendable (KeySnapshot) -> Void
    ) {
        self.init(
            configuration: configuration, metrics: metrics, clock: clock, logger: TestLoggers.standard, publish: publish
        )
    }
}
