import NIOCore

/// Everything derived from one configuration that requests read: immutable, built once per
/// (re)load and shared by all event loops. In-flight requests keep the snapshot they started
/// with (docs/architecture.md).
final class RuntimeSnapshot: Sendable {
    let configuration: GatewayConfiguration
    let generation: UInt64
    let routes: RouteTable
    /// The routes as a lenient matcher reads them (without case, trailing dots and spaces): a
    /// path that names another route that way is refused (docs/forwarding.md).
    let lenientRoutes: LenientRoutes
    let forwarding: ForwardingPolicy
    /// Each authentication feature's services for this configuration, process-wide; each
    /// loop's steps are built around them (`StepContext`).
    let authentication: AuthenticationFeatures
    /// With `browserSignIn` (docs/browser-sign-in.md): its endpoints are answered before routes.
    var browserSignIn: BrowserSignIn? { self.authentication.signIn?.browserSignIn }
    let idleTimeout: TimeAmount
    let requestHeaderTimeout: TimeAmount
    /// The configuration's backends, in order, resolved once: a route reaches its backend by
    /// position (`ResolvedRoute.backendIndex`), never by name.
    let backends: [ResolvedBackend]
    /// How far ahead a connection's timer is armed at most: the shortest timeout a connection
    /// can be under, so a deadline moving earlier by a state change never needs a new timer.
    let timerGranularity: TimeAmount
    /// Refresh tokens are for the auth service only, API keys for the gateway only: removed from
    /// every forwarded request.
    let refreshTokenRemovals: [TokenEdit]
    /// Header fields encoded never-indexed on HTTP/2, both ways (docs/http2.md).
    let secretHeaders: SecretHeaderNames
    /// The rate limits (docs/rate-limits.md); nil without any, so requests pay nothing.
    let rateLimiter: RateLimiter?
    /// `authorizer` (docs/authorizer.md); nil without it, so requests pay nothing.
    let authorizer: AuthorizerConfiguration?
    /// `paths`: how every request target is made canonical (docs/forwarding.md).
    let paths: PathSettings
    /// `signals` (docs/streams.md): the Shared Signals receiver; nil without it.
    let signals: SignalReceiver?

    /// `backendTLS` and `backendAvailability`: each backend's, in the order of
    /// `configuration.backends` (`UpstreamTLS.backends`, `BackendAvailabilities.update`).
    init(
        configuration: GatewayConfiguration, generation: UInt64, authentication: AuthenticationFeatures,
        rateLimiter: RateLimiter? = nil, signals: SignalReceiver? = nil, backendTLS: [UpstreamTLS?],
        backendAvailability: [TargetAvailability]
    ) {
        self.signals = signals
        let backends = ResolvedBackend.resolve(
            configuration.backends, tls: backendTLS, availabilities: backendAvailability)
        self.backends = backends
        self.configuration = configuration
        self.rateLimiter = rateLimiter
        self.authorizer = configuration.authorizer
        self.paths = configuration.paths
        self.generation = generation
        self.routes = RouteTable(configuration.routes, backendNames: backends.map(\.name))
        self.lenientRoutes = LenientRoutes(configuration.routes, backendNames: backends.map(\.name))
        self.forwarding = ForwardingPolicy(configuration: configuration)
        self.authentication = authentication
        self.idleTimeout = .seconds(Int64(configuration.timeouts.idleSeconds))
        self.requestHeaderTimeout = .seconds(Int64(configuration.timeouts.requestHeaderSeconds))
        self.timerGranularity = ([self.idleTimeout, self.requestHeaderTimeout] + backends.map(\.responseTimeout)).min()!
        self.secretHeaders = SecretHeaderNames(configuration: configuration)
        var removals = (configuration.authService?.refresh?.refreshTokenSources ?? []).map { source in
            switch source {
            case .header(let name, _, _):
                return TokenEdit(location: .header(name: name, bearer: false), replacement: nil)
            case .cookie(let name): return TokenEdit(location: .cookie(name: name), replacement: nil)
            case .websocketProtocol(let prefix):
                return TokenEdit(location: .websocketProtocol(prefix: prefix), replacement: nil)
            }
        }
        // A token in `Sec-WebSocket-Protocol` never reaches the backend (docs/streams.md).
        for case .websocketProtocol(let prefix) in configuration.tokens.sources {
            removals.append(TokenEdit(location: .websocketProtocol(prefix: prefix), replacement: nil))
        }
        if let apiKeys = authentication.apiKeys {
            removals.append(TokenEdit(location: apiKeys.location, replacement: nil))
        }
        self.refreshTokenRemovals = removals
    }

    /// The backend `route` forwards to.
    func backend(of route: ResolvedRoute) -> ResolvedBackend { self.backends[route.backendIndex] }
}
