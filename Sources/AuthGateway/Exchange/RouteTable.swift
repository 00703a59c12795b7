/// The configured routes and the index that finds a request's route (docs/configuration.md,
/// "Routes and path matching").
///
/// The answer is the one a first-to-last scan gives — among the routes whose host, path and
/// methods match, the first in the file — at a cost that does not grow with the number of
/// routes: `RouteIndex` finds the candidates by the host's hash and the path's bytes, and the
/// smallest route index among them wins.
package struct RouteTable: Sendable {
    /// In configuration order: a route's position here is its position in the file.
    let routes: [ResolvedRoute]
    private let index: RouteIndex

    /// `backendNames`: the configuration's backends in order; every route's backend is one of
    /// them (a validated configuration's are).
    package init(_ routes: [RouteConfiguration], backendNames: [String]) {
        var indices: [String: Int] = [:]
        for (index, name) in backendNames.enumerated() { indices[name] = indices[name] ?? index }
        self.routes = routes.map { route in
            guard let index = indices[route.backend] else {
                preconditionFailure("route \(route.name) names an unknown backend (the configuration is validated)")
            }
            return ResolvedRoute(configuration: route, backendIndex: index)
        }
        self.index = RouteIndex(routes)
    }

    /// The first route whose host, path and methods all match; nil means 404.
    ///
    /// `host` is the request's Host (or absolute-form authority) without port, any case.
    /// A route whose `methods` exclude the method does not match and matching goes on.
    package func match(host: Substring?, path: String, method: String) -> ResolvedRoute? {
        guard let found = self.index.first(host: host, path: path, method: method) else { return nil }
        return self.routes[found]
    }

    /// The host part of a Host header value: brackets of IPv6 literals kept, port dropped.
    static func hostWithoutPort(_ value: Substring) -> Substring {
        // UTF-8 view: no grapheme breaking for a per-request scan.
        if value.utf8.first == UInt8(ascii: "[") {
            guard let close = value.utf8.firstIndex(of: UInt8(ascii: "]")) else { return value }
            return value[...close]
        }
        guard let colon = value.utf8.lastIndex(of: UInt8(ascii: ":")) else { return value }
        return value[..<colon]
    }
}
