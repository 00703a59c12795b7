/// `routes[].cors` (docs/policies.md, "CORS"): which other origins' pages may call the route
/// from a browser, answered by the gateway (preflights before authentication; the headers on
/// every response to an allowed origin, the gateway's own errors included).
public struct CORSConfiguration: Sendable, Equatable {
    /// Exact origins (`https://app.example.com`), or `*` (not with `allowCredentials`).
    public var allowOrigins: [String]
    /// Upper-case; the route's own `methods` apply on top.
    public var allowMethods: [String] = ["GET", "HEAD", "POST"]
    /// Lower-case request header names a page may send; `*` allows any.
    public var allowHeaders: [String] = []
    public var exposeHeaders: [String] = []
    public var allowCredentials = false
    public var maxAgeSeconds: Int? = nil

    public init(allowOrigins: [String]) { self.allowOrigins = allowOrigins }

    public func allows(origin: String) -> Bool {
        self.allowOrigins.contains("*") || self.allowOrigins.contains(origin)
    }
}
