import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1

/// The gateway `check --request` decides with: built from the configuration exactly as
/// `serve` builds a worker's view — the same snapshot, the same registered steps
/// (`AuthenticationSteps`), the same planner decision (`RequestPlanner.decide`: route,
/// authentication, rate limits, identity headers) — on an embedded loop, with no client for
/// any URL and no database, so nothing is contacted (docs/policies.md, "check --request").
/// What the command line says about the caller (`--claims`, `--no-verify`, `--profile`) is
/// put where a live gateway would have learned it: the verified-token cache, the profile cache.
final class OfflineGateway {
    let configuration: GatewayConfiguration
    let eventLoop = EmbeddedEventLoop()
    let shared: GatewayShared
    let snapshot: RuntimeSnapshot
    let notes = StepNotes()
    private let now: Double

    init(configuration: GatewayConfiguration, now: Double) throws {
        self.configuration = configuration
        self.now = now
        var logger = Logger(label: "auth-gateway.check")
        logger.logLevel = .critical
        // No event loop group: no shared-state database is connected.
        let shared = try GatewayComposition.makeShared(
            configuration, clock: { now }, logger: logger, connector: SocketConnector(), publisher: KeyPublisher(),
            group: nil)
        self.shared = shared
        let parts = GatewayComposition.reloadableParts(for: configuration, keeping: nil, shared: shared)
        self.snapshot = GatewayComposition.makeSnapshot(
            configuration, generation: 1, shared: shared, parts: parts,
            backendTLS: configuration.backends.map { _ in nil })
    }

    /// The keys as the key store starts with them: the static ones (nothing is fetched).
    var keys: KeySnapshot { self.shared.keyStore.snapshot }

    /// Makes `token` verify as `claims` (`--claims`, `--no-verify`): its issuer is the one its
    /// `iss` names, else the first configured. Nil when no issuer is configured at all.
    func trust(_ token: String, claims: JSONObject) -> String? {
        let keys = self.keys
        guard !keys.issuers.isEmpty else { return nil }
        let index = claims["iss"]?.stringValue.flatMap { keys.issuerIndex(for: $0) } ?? 0
        let verified = VerifiedToken(
            issuerIndex: index, generation: keys.generation, claims: claims, subject: claims["sub"]?.stringValue,
            expiresAt: claims["exp"]?.numberValue?.double ?? .infinity, notBefore: claims["nbf"]?.numberValue?.double,
            issuedAt: nil, leewaySeconds: Double(keys.issuers[index].leewaySeconds))
        self.shared.authentication.verifiedTokens.remember(token[...], as: verified)
        return keys.issuers[index].issuer
    }

    /// Holds `profile` as the auth service's answer for `subject` of `issuer` (`--profile`).
    func remember(profile: JSONObject, issuer: String, subject: String) {
        self.snapshot.authentication.profiles?.remember(
            profile, for: ProfileKey(issuer: issuer, subject: subject), on: self.eventLoop)
    }

    /// The planner's decision, as a live gateway's; nil when it waits on something that never
    /// answers offline.
    func decide(
        method: HTTPMethod, target: RequestTarget, headers: HTTPHeaders, connection: ClientConnectionInfo
    )
        -> AccessDecision?
    {
        let context = StepContext(
            eventLoop: self.eventLoop, configuration: self.configuration, features: self.snapshot.authentication,
            state: self.shared.authentication, metrics: WorkerMetrics(), clients: { _ in nil },
            endpoints: AuthServiceEndpoints(), introspectionEndpoint: { nil }, logger: self.shared.logger,
            clock: self.shared.clock, notes: self.notes)
        let environment = OfflineEnvironment(
            snapshot: self.snapshot, keys: self.keys, authenticator: RequestAuthenticator(context), now: self.now)
        let planner = RequestPlanner(environment: environment, snapshot: self.snapshot, connection: connection)
        let input = DecisionInput(
            method: method, target: target, headers: headers, connection: connection, now: self.now)
        switch planner.decide(input, requestID: "check") {
        case .ready(let decision):
            return decision
        case .pending(let future, _):
            var decided: AccessDecision?
            future.assumeIsolated().whenSuccess { decided = $0 }
            self.eventLoop.run()
            return decided
        }
    }
}

/// The exchange environment of `OfflineGateway`: no pools, no access log, no tracing.
private final class OfflineEnvironment: ExchangeEnvironment {
    let snapshot: RuntimeSnapshot
    let keys: KeySnapshot
    let authenticator: RequestAuthenticator
    let rateLimitKeys = RateLimitKeyMemo()
    let metrics = WorkerMetrics()
    let accessLog = AccessLog(enabled: false)
    /// Always empty: a decision made offline opens no stream (docs/streams.md).
    let streams: LoopStreams
    private let now: Double

    init(snapshot: RuntimeSnapshot, keys: KeySnapshot, authenticator: RequestAuthenticator, now: Double) {
        self.snapshot = snapshot
        self.keys = keys
        self.authenticator = authenticator
        self.now = now
        self.streams = LoopStreams(metrics: self.metrics)
    }

    var tracing: GatewayTracing? { nil }
    var isDraining: Bool { false }
    func pool(for backend: ResolvedBackend) -> UpstreamPool? { nil }
    func wallClock() -> Double { self.now }
    func requestID(forwarded value: String?) -> String { "check" }
    func healthResponse(path: String, method: HTTPMethod) -> LocalResponse? { nil }
    func signInTokenEndpoint(_ signIn: BrowserSignIn) -> UpstreamEndpoint? { nil }
}
