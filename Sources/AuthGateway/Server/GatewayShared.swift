import Crypto
import Foundation
import Logging
import NIOSSL

/// What all event loops share: the process-wide caches and coordinators (docs/architecture.md),
/// health, slow-path metrics, the clock.
final class GatewayShared: Sendable {
    let verifiedTokens: VerifiedTokenCache
    /// `jti`s of accepted DPoP proofs (process-wide, kept across reloads; docs/authentication.md).
    let dpopReplay = ReplayCache()
    /// Browser sessions (docs/browser-sign-in.md): process-wide, kept across reloads; with
    /// `sharedState`, the database's read-through cache.
    let sessions: SessionStore
    /// Seals sign-in flow cookies (`SignInFlowSealer.key`): derived from
    /// `sharedState.encryptionKeyBase64`, else random per process. Kept across reloads.
    let signInFlowKey: SymmetricKey
    /// The `DPoP-Nonce` key (`DPoPNonce.key`): derived from `sharedState.encryptionKeyBase64`,
    /// else random per process. Kept across reloads.
    let dpopNonceKey: SymmetricKey
    let keyStore: KeyStore
    let health: HealthState
    let processMetrics: ProcessMetrics
    /// The refresh single flight and grace table: outlives configurations (docs/operations.md).
    let refreshStore: RefreshStore
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
        verifiedTokens: VerifiedTokenCache, keyStore: KeyStore, health: HealthState, processMetrics: ProcessMetrics,
        refreshStore: RefreshStore, clock: @escaping @Sendable () -> Double, clientTLS: NIOSSLContext?,
        connector: UpstreamConnector = SocketConnector(), tracing: GatewayTracing? = nil,
        sharedState: PostgresSharedState? = nil,
        logger: Logger, sessions: SessionStore = LocalSessionStore(capacity: 100_000),
        dpopNonceKey: SymmetricKey = DPoPNonce.key(sharedSecret: nil),
        signInFlowKey: SymmetricKey = SignInFlowSealer.key(sharedStateKey: nil),
        streams: StreamDirectory = StreamDirectory()
    ) {
        self.streams = streams
        self.signInFlowKey = signInFlowKey
        self.logger = logger
        self.sessions = sessions
        self.dpopNonceKey = dpopNonceKey
        self.backendAvailabilities = BackendAvailabilities(logger: logger, metrics: processMetrics)
        self.sharedState = sharedState
        self.verifiedTokens = verifiedTokens
        self.keyStore = keyStore
        self.health = health
        self.processMetrics = processMetrics
        self.refreshStore = refreshStore
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
