import NIOHTTP1

/// The request being authenticated, as far as authentication cares: what each step reads of it.
/// Built once per request by `RequestPlanner`; the planner goes on to use it for rate limits and
/// identity headers, so every rule reads the request the same way (`IdentityFields`).
struct AuthRequest {
    let headers: HTTPHeaders
    /// The matched route, by reference (see `ResolvedRoute`).
    let resolved: ResolvedRoute
    var route: RouteConfiguration { self.resolved.configuration }
    /// The keys of the request's event loop when it arrived.
    let keys: KeySnapshot
    /// Wall-clock seconds since 1970.
    let now: Double
    /// The connection it came on: the peer, whether the peer is a trusted proxy, TLS.
    let connection: ClientConnectionInfo
    /// `trustedProxies`: whose `X-Forwarded-For` hops `client.ip` believes.
    let trustedProxies: [CIDR]
    /// For DPoP proofs (`htm`, `htu`) and `request.*`: the method as sent and the canonical
    /// target (docs/forwarding.md, "Request targets").
    var method: HTTPMethod = .GET
    var target = RequestTarget(path: "/", query: nil)
    /// The request's trace, when it is traced: the slow steps open child spans in it.
    var trace: RequestTrace? = nil

    init(
        headers: HTTPHeaders, resolved: ResolvedRoute, keys: KeySnapshot, now: Double,
        connection: ClientConnectionInfo, trustedProxies: [CIDR] = [], method: HTTPMethod = .GET,
        target: RequestTarget = RequestTarget(path: "/", query: nil), trace: RequestTrace? = nil
    ) {
        self.headers = headers
        self.resolved = resolved
        self.keys = keys
        self.now = now
        self.connection = connection
        self.trustedProxies = trustedProxies
        self.method = method
        self.target = target
        self.trace = trace
    }

    /// For callers that hold only a configuration (tests): the route resolved to backend 0.
    init(
        headers: HTTPHeaders, route: RouteConfiguration, keys: KeySnapshot, now: Double,
        connection: ClientConnectionInfo, trustedProxies: [CIDR] = [], method: HTTPMethod = .GET,
        target: RequestTarget = RequestTarget(path: "/", query: nil), trace: RequestTrace? = nil
    ) {
        self.init(
            headers: headers, resolved: ResolvedRoute(configuration: route, backendIndex: 0), keys: keys, now: now,
            connection: connection, trustedProxies: trustedProxies, method: method, target: target, trace: trace)
    }

    var isTLS: Bool { self.connection.isTLS }

    /// The client's address for `client.ip` (docs/rate-limits.md): the peer, or the first
    /// untrusted `X-Forwarded-For` hop when the peer is a trusted proxy. Computed when asked.
    var clientIP: String {
        ClientAddress.resolve(
            peerIP: self.connection.peerIP, peerIsTrustedProxy: self.connection.peerIsTrustedProxy,
            headers: self.headers, trustedProxies: self.trustedProxies
        )
    }
}
