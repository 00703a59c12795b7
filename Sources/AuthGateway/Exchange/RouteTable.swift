/// The configured routes, matched first to last (SPEC §3.3).
package struct RouteTable: Sendable {
    let routes: [RouteConfiguration]

    package init(_ routes: [RouteConfiguration]) {
        self.routes = routes
    }

    /// The first route whose host, path and methods all match; nil means 404.
    ///
    /// `host` is the request's Host (or absolute-form authority) without port, any case.
    /// A route whose `methods` exclude the method does not match and matching goes on.
    package func match(host: Substring?, path: String, method: String) -> RouteConfiguration? {
        for route in self.routes {
            if let routeHost = route.host {
                guard let host, Self.equalsIgnoringASCIICase(host, routeHost) else { continue }
            }
            switch route.pathMatch {
            case .prefix(let prefix):
                guard path.hasPrefix(prefix) else { continue }
            case .exact(let exact):
                guard path == exact else { continue }
            }
            if let methods = route.methods, !methods.contains(method) { continue }
            return route
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
