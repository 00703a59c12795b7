import Testing

@testable import AuthGateway

/// `LenientPath` and `LenientRoutes` (docs/forwarding.md, "Spellings that are refused"): a path
/// that names another route read without case or trailing dots and spaces — as Caddy's path
/// matchers, IIS or Java's `equalsIgnoreCase` read it — is found, and one that names the same
/// route is left alone.
@Suite("LenientPath")
struct LenientPathTests {
    @Test(
        "the key a lenient matcher reads",
        arguments: [
            ("/ADMIN/x", "/admin/x"),
            ("/Admin/Users/ABC", "/admin/users/abc"),
            // Go's strings.ToLower: a dotted capital I is i (found against a real Caddy).
            ("/adm%C4%B0n/x", "/admin/x"),
            // Java's equalsIgnoreCase: a dotless i, a long s and the Kelvin sign match ASCII.
            ("/ADM%C4%B1N/x", "/admin/x"),
            ("/%C5%BFecret", "/secret"),
            ("/%E2%84%AAey", "/key"),
            ("/CAF%C3%89", "/café"),
            ("/stra%C3%9Fe", "/strasse"),
            // Escapes of ASCII characters stay escapes; only letters outside them fold.
            ("/A%20B%3F", "/a%20b%3F"),
            ("/A%2FB", "/a%2Fb"),
            // Trailing dots and spaces go (Caddy before 2.7, Windows).
            ("/admin.", "/admin"),
            ("/admin.%20.", "/admin"),
            ("/x/file.txt.", "/x/file.txt"),
        ])
    func key(_ path: String, _ expected: String) {
        #expect(LenientPath.key(path[...]) == expected)
    }

    @Test(
        "a path that is its own key",
        arguments: ["/", "/admin/x", "/a%20b%3F/%7E", "/public/%2F", "/x/123-._~", "/a.b/", "/%20x"])
    func ownKey(_ path: String) {
        #expect(LenientPath.key(path[...]) == nil)
    }

    static func route(_ name: String, _ match: RouteConfiguration.PathMatch) -> RouteConfiguration {
        RouteConfiguration(
            name: name, host: nil, pathMatch: match, methods: nil, backend: "api", auth: .none, stripPathPrefix: false,
            forwardAccessToken: true)
    }

    static let routes = [
        Self.route("public", .prefix("/public/")), Self.route("admin", .prefix("/admin/")),
        Self.route("api", .prefix("/API/")), Self.route("health", .exact("/healthz")),
        Self.route("open", .prefix("/")),
    ]

    @Test(
        "another route read leniently",
        arguments: [
            ("/ADMIN/x", true),
            ("/Admin/users", true),
            ("/adm%C4%B0n/x", true),
            ("/PUBLIC/x", true),
            ("/HEALTHZ", true),
            ("/healthz.", true),
            ("/healthz%20", true),
            ("/api/x", true),
            // The same route either way: upper-case IDs, a route spelled in capitals, a dot
            // inside a route.
            ("/admin/Users/ABC", false),
            ("/public/CAF%C3%89", false),
            ("/API/Orders", false),
            ("/Other/Thing", false),
            ("/admin/x.", false),
            ("/admin/x", false),
        ])
    func namesAnotherRoute(_ path: String, _ refused: Bool) {
        let table = RouteTable(Self.routes, backendNames: ["api"])
        let lenient = LenientRoutes(Self.routes, backendNames: ["api"])
        let target = RequestTarget(path: path, query: nil)
        #expect(lenient.namesAnotherRoute(target, method: "GET", in: table) == refused)
    }
}
