/// One entry of `rateLimits` (docs/rate-limits.md): a token bucket per value of `key`.
public struct RateLimitConfiguration: Sendable, Equatable {
    /// What a request is counted under.
    public enum Key: Sendable, Hashable, CustomStringConvertible {
        /// A verified claim (`claims.sub`, dotted paths as for identity headers).
        case claim(String)
        /// A member of the user's profile (`profile.tenant`).
        case profile(String)
        /// The client's address: the peer, or the first untrusted `X-Forwarded-For` hop when
        /// the peer is a trusted proxy.
        case clientIP
        /// The matched route's name: one bucket for the whole route.
        case route

        /// Parses `claims.<name>`, `profile.<name>`, `client.ip` or `route`.
        public init?(parsing text: String) {
            switch text {
            case "client.ip": self = .clientIP
            case "route": self = .route
            default:
                guard let path = IdentityValuePath(parsing: text) else { return nil }
                switch path.source {
                case .claims: self = .claim(path.name)
                case .profile: self = .profile(path.name)
                // Not a key (yet): limits count per identity, and a DPoP key is one per client.
                case .dpop: return nil
                // Chosen by the client: not an identity to count under.
                case .request: return nil
                case .client: self = .clientIP
                }
            }
        }

        public var description: String {
            switch self {
            case .claim(let name): return "claims.\(name)"
            case .profile(let name): return "profile.\(name)"
            case .clientIP: return "client.ip"
            case .route: return "route"
            }
        }
    }

    public static let defaultMaxKeys = 100_000

    public var name: String
    public var key: Key
    /// Refill rate; may be fractional (> 0).
    public var requestsPerSecond: Double
    /// Requests an idle key may make at once (≥ 1).
    public var burst: Int
    /// The route names the limit applies to; nil: every route.
    public var routes: [String]? {
        didSet { self.routeNames = self.routes.map(Set.init) }
    }
    /// `routes` as a set: `applies(to:)` is asked once per route and limit when a configuration
    /// is built, and a list of 10 000 routes searched for each of 10 000 routes took seconds.
    private var routeNames: Set<String>?
    /// Keys remembered per limit; the least recently used past it is forgotten.
    public var maxKeys: Int

    public init(
        name: String, key: Key, requestsPerSecond: Double, burst: Int, routes: [String]? = nil,
        maxKeys: Int = Self.defaultMaxKeys
    ) {
        self.name = name
        self.key = key
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
        self.routes = routes
        self.routeNames = routes.map(Set.init)
        self.maxKeys = maxKeys
    }

    /// Whether the limit applies to requests on `route`.
    public func applies(to route: String) -> Bool {
        self.routeNames?.contains(route) ?? true
    }
}

extension GatewayConfiguration {
    /// The routes a rate limit keyed by `profile.*` applies to: their requests need the
    /// user's profile even when nothing else on the route reads it.
    public var routesWithProfileRateLimits: Set<String> {
        var names: Set<String> = []
        for limit in self.rateLimits {
            guard case .profile = limit.key else { continue }
            for route in self.routes where limit.applies(to: route.name) { names.insert(route.name) }
        }
        return names
    }
}
