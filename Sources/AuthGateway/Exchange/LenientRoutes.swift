/// The route table as a lenient matcher reads it (docs/forwarding.md, "Spellings that are
/// refused"): every route's path turned into its `LenientPath` key. A path that names another
/// route read leniently than it names as it is — `/ADMIN/users` beside a route `/admin/` and a
/// catch-all, `/admin.` beside an exact `/admin` — is served from the admin location by a
/// backend that ignores case or trailing dots (Caddy's path matchers, IIS) and from another
/// one by a backend that does not (nginx): the gateway cannot know which, so it refuses the
/// spelling, as it does every spelling servers read differently.
struct LenientRoutes: Sendable {
    private let table: RouteTable
    /// Whether some route's path has a key of its own: then even a path that is its own key can
    /// name a route read leniently (`/api/x` and a route `/API/`).
    private let routePathsChange: Bool

    init(_ routes: [RouteConfiguration], backendNames: [String]) {
        var routePathsChange = false
        self.table = RouteTable(
            routes.map { route in
                var lenient = route
                switch route.pathMatch {
                case .prefix(let prefix):
                    if let key = LenientPath.key(prefix[...]) {
                        lenient.pathMatch = .prefix(key)
                        routePathsChange = true
                    }
                case .exact(let path):
                    if let key = LenientPath.key(path[...]) {
                        lenient.pathMatch = .exact(key)
                        routePathsChange = true
                    }
                }
                return lenient
            }, backendNames: backendNames)
        self.routePathsChange = routePathsChange
    }

    /// Whether `target`'s path, read leniently, names another route (or none where `routes`
    /// has one, or one where it has none) than in `routes`, the table that routes it. One scan
    /// of the path when it is its own key and no route's path has a key of its own.
    func namesAnotherRoute(_ target: RequestTarget, method: String, in routes: RouteTable) -> Bool {
        let key = LenientPath.key(target.path[...])
        guard key != nil || self.routePathsChange else { return false }
        let host = target.host?.name
        let exact = routes.match(host: host, path: target.path, method: method)
        let lenient = self.table.match(host: host, path: key ?? target.path, method: method)
        return exact?.configuration.name != lenient?.configuration.name
    }
}
