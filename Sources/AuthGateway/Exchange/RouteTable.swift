/// The configured routes, matched first to last (docs/configuration.md).
package struct RouteTable: Sendable {
    let routes: [ResolvedRoute]

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
    }

    /// The first route whose host, path and methods all match; nil means 404.
    ///
    /// `host` is the request's Host (or absolute-form authority) without port, any case.
    /// A route whose `methods` exclude the method does not match and matching goes on.
    package func match(host: Substring?, path: String, method: String) -> ResolvedRoute? {
        for resolved in self.routes {
            // Fields read in place: a copy of the whole configuration per route tried costs.
            if let routeHost = resolved.configuration.host {
                guard let host, Self.equalsIgnoringASCIICase(host, routeHost) else { continue }
            }
            switch resolved.configuration.pathMatch {
            case .prefix(let prefix):
                guard path.hasPrefix(prefix) else { continue }
            case .exact(let exact):
                guard path == exact else { continue }
            }
            if let methods = resolved.configuration.methods, !methods.contains(method) { continue }
            return resolved
        }
        return nil
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

    private static func equalsIgnoringASCIICase(_ lhs: Substring, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        for (a, b) in zip(lhs.utf8, rhs.utf8) where a != b {
            let lowerA = a >= 65 && a <= 90 ? a + 32 : a
            let lowerB = b >= 65 && b <= 90 ? b + 32 : b
            if lowerA != lowerB { return false }
        }
        return true
    }
}
