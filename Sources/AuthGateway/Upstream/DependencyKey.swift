/// What `HealthState` keeps an upstream URL's connect results under: which of the gateway's
/// upstreams, and which of its URLs.
///
/// A typed key rather than a formatted string, so the writer (a pool's connect results,
/// `UpstreamRegistry`) and the reader (`/healthz`, `HealthEndpoints`) cannot drift apart. A
/// backend's keys are made once per (re)load (`ResolvedBackend.healthKeys`), not per connect.
struct DependencyKey: Hashable, Sendable {
    /// The upstreams the gateway talks to (docs/forwarding.md, docs/authentication.md).
    enum Upstream: Hashable, Sendable {
        /// A configured backend, by name.
        case backend(String)
        /// `authService.url`.
        case authService
        /// An issuer's `jwksURL`.
        case jwks
        /// An issuer's discovery document.
        case discovery
        /// An endpoint a discovery document names on an origin nothing configured uses.
        case discovered
        /// `tokens.introspection`.
        case introspection

        /// The name of the upstream's pools (`UpstreamPool.name`).
        var poolName: String {
            switch self {
            case .backend(let name): "backend \(name)"
            case .authService: "auth service"
            case .jwks: "jwks"
            case .discovery: "discovery"
            case .discovered: "discovered"
            case .introspection: "introspection"
            }
        }
    }

    let upstream: Upstream
    let url: UpstreamURL
}
