/// `authorizer` (docs/authorizer.md): the gateway also answers other proxies' "may this request
/// pass?" calls — nginx `auth_request`, Traefik and Caddy forward auth, Envoy `ext_authz` over
/// HTTP and gRPC — deciding each with the same routes and rules as a proxied request.
public struct AuthorizerConfiguration: Sendable, Equatable {
    /// Where the HTTP contracts live (`auth-request`, `forward-auth`, `ext-authz/…`); starts and
    /// ends with `/`. The gRPC `Check` is at its standard path whatever this is.
    public var pathPrefix = "/.gateway/authz/"
    /// The callers whose questions are decided; others get 403 without a decision.
    public var trustedPeers: [CIDR] = Self.loopback

    /// Loopback only: the default, for a proxy on the same host.
    public static let loopback = [CIDR(parsing: "127.0.0.0/8")!, CIDR(parsing: "::1/128")!]

    public init() {}
}
