import Crypto
import Foundation
import Logging
import NIOSSL

/// What all event loops share: the process-wide caches and coordinators (docs/architecture.md),
/// health, slow-path metrics, the clock.
final class GatewayShared: Sendable {
    /// What authentication has learned and checks with, for the life of the process.
    let authentication: AuthenticationState
    var keyStore: KeyStore { self.authentication.keyStore }
    let health: HealthState
    let processMetrics: ProcessMetrics
    /// With `sharedState.postgres`: the database behind `refreshStore`, its background work
    /// and health (docs/shared-state.md). Kept across reloads.
    let sharedState: PostgresSharedState?
    /// Unix seconds; injectable so tests can move time.
    let clock: @Sendable () -> Double
    /// Client TLS for the gateway's own HTTPS calls — auth service, JWKS, discovery (system
    /// trust store plus `authService.caCertificatePEMFile`). Never used for backends: each
    /// has its own (`ResolvedBackend.tls`, docs/forwarding.md).
    let clientTLS: NIOSSLContext?
    /// Opens upstream connections: TCP/TLS sockets, or embedded channels in the in-process
    /// harness (`AuthGatewayTesting`).
    let connector: UpstreamConnector
    /// Request tracing; nil without `tracing` (then requests create no trace objects).
    let tracing: GatewayTracing?
    /// Which URL of each backend is in rotation (docs/forwarding.md), process-wide.
    let backendAvailabilities: BackendAvailabilities
    /// Open client connections, all loops together (each loop's `ConnectionRegistry` counts
    /// its own in and out).
    let clientConnections = ClientConnectionCount()
    /// The application's logger (`GatewayApplication.make`), for everything built from here.
    let logger: Logger
    /// Every loop's long-lived streams, for revocations (docs/streams.md); the session stores
    /// tell it of every end.
    let streams: StreamDirectory

    init(
        authentication: AuthenticationState, health: HealthState, processMetrics: ProcessMetrics,
        clock: @escaping @Sendable () -> Double, clientTLS: NIOSSLContext?,
        connector: UpstreamConnector = SocketConnector(), tracing: GatewayTracing? = nil,
        sharedState: PostgresSharedState? = nil, logger: Logger, streams: StreamDirectory = StreamDirectory()
    ) {
        self.streams = streams
        self.authentication = authentication
        self.logger = logger
        self.backendAvailabilities = BackendAvailabilities(logger: logger, metrics: processMetrics)
        self.sharedState = sharedState
        self.health = health
        self.processMetrics = processMetrics
        self.clock = clock
        self.clientTLS = clientTLS
        self.connector = connector
        self.tracing = tracing
    }

    static let systemClock: @Sendable () -> Double = { Date().timeIntervalSince1970 }

    /// The TLS context for calls to HTTPS upstreams.
    static func makeClientTLS(caFile: String?, alpn: [String] = []) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.applicationProtocols = alpn
        if let caFile {
            configuration.additionalTrustRoots = [.file(caFile)]
        }
        return try NIOSSLContext(configuration: configuration)
    }
}
