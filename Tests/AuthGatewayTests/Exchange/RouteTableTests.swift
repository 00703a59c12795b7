import Testing

@testable import AuthGateway

@Suite("RouteTable")
struct RouteTableTests {
    private func route(
        _ name: String,
        host: String? = nil,
        _ match: RouteConfiguration.PathMatch,
        methods: Set<String>? = nil
    ) -> RouteConfiguration {
        RouteConfiguration(
            name: name, host: host, pathMatch: match, methods: methods, backend: "api", auth: .required,
            require: .empty, stripPathPrefix: false, forwardAccessToken: true)
    }

    /// A table of `routes`, which all forward to the one backend `api`.
    private static func table(_ routes: [RouteConfiguration]) -> RouteTable {
        RouteTable(routes, backendNames: ["api"])
    }

    private func match(_ table: RouteTable, host: String? = nil, _ path: String, method: String = "GET") -> String? {
        table.match(host: host.map { $0[...] }, path: path, method: method)?.configuration.name
    }

    @Test("first match in order wins")
    func firstMatchWins() {
        let table = Self.table([
            route("public", .prefix("/public/")), route("catch-all", .prefix("/")),
            route("never", .prefix("/public/x")),
        ])
        #expect(match(table, "/public/x") == "public")
        #expect(match(table, "/private") == "catch-all")
        // Order, not specificity.
        let reversed = Self.table([route("catch-all", .prefix("/")), route("public", .prefix("/public/"))])
        #expect(match(reversed, "/public/x") == "catch-all")
    }

    @Test("exact paths match only themselves; prefixes match by string prefix")
    func exactAndPrefix() {
        let table = Self.table([route("ping", .exact("/v1/ping")), route("v1", .prefix("/v1/"))])
        #expect(match(table, "/v1/ping") == "ping")
        #expect(match(table, "/v1/ping/") == "v1")
        #expect(match(table, "/v1/pingx") == "v1")
        #expect(match(table, "/v1/") == "v1")
        #expect(match(table, "/v1") == nil)
        #expect(match(table, "/V1/ping") == nil)
    }

    @Test("a host route matches its host in any case, and nothing else")
    func hostMatching() {
        let table = Self.table([
            route("api", host: "api.example.com", .prefix("/")), route("other", .prefix("/other/")),
        ])
        #expect(match(table, host: "api.example.com", "/x") == "api")
        #expect(match(table, host: "API.Example.COM", "/x") == "api")
        #expect(match(table, host: "www.example.com", "/x") == nil)
        #expect(match(table, host: "api.example.com.evil", "/x") == nil)
        #expect(match(table, host: "pi.example.com", "/x") == nil)
        #expect(match(table, host: nil, "/x") == nil)
        // A route without host matches any host, also none.
        #expect(match(table, host: "www.example.com", "/other/1") == "other")
        #expect(match(table, host: nil, "/other/1") == "other")
    }

    @Test("the port is dropped from the Host value before matching")
    func hostWithoutPort() {
        #expect(RouteTable.hostWithoutPort("api.example.com:8080") == "api.example.com")
        #expect(RouteTable.hostWithoutPort("api.example.com") == "api.example.com")
        #expect(RouteTable.hostWithoutPort("[::1]:8080") == "[::1]")
        #expect(RouteTable.hostWithoutPort("[::1]") == "[::1]")
        #expect(RouteTable.hostWithoutPort("127.0.0.1:80") == "127.0.0.1")
        let table = Self.table([route("api", host: "api.example.com", .prefix("/"))])
        #expect(
            table.match(host: RouteTable.hostWithoutPort("API.example.com:8443"), path: "/", method: "GET")?
                .configuration.name
                == "api")
    }

    @Test("a route whose methods exclude the request's does not match, and matching goes on (no 405)")
    func methodsFilter() {
        let table = Self.table([
            route("admin-write", .prefix("/admin/"), methods: ["POST", "PUT"]),
            route("admin-read", .prefix("/admin/"), methods: ["GET"]),
            route("fallback", .prefix("/")),
        ])
        #expect(match(table, "/admin/x", method: "POST") == "admin-write")
        #expect(match(table, "/admin/x", method: "GET") == "admin-read")
        #expect(match(table, "/admin/x", method: "DELETE") == "fallback")
        #expect(match(table, "/admin/x", method: "HEAD") == "fallback")
    }

    @Test("a prefix is a plain string prefix: /api matches /apix")
    func plainPrefix() {
        let table = Self.table([route("api", .prefix("/api")), route("rest", .prefix("/"))])
        #expect(match(table, "/apix") == "api")
        #expect(match(table, "/api") == "api")
        #expect(match(table, "/ap") == "rest")
        #expect(match(Self.table([route("empty", .prefix(""))]), "/anything") == "empty")
    }

    @Test("host routes and routes for every host keep their order, whichever index finds them")
    func hostAndAnyHostOrder() {
        let table = Self.table([
            route("any-first", .prefix("/a/")),
            route("host", host: "API.example.com", .prefix("/")),
            route("any-after", .prefix("/")),
            route("other-host", host: "other.example", .exact("/x")),
        ])
        #expect(match(table, host: "api.example.com", "/a/1") == "any-first")
        #expect(match(table, host: "api.EXAMPLE.com", "/b") == "host")
        #expect(match(table, host: "other.example", "/x") == "any-after")
        #expect(match(table, host: nil, "/b") == "any-after")
        let hostsOnly = Self.table([
            route("one", host: "one.example", .prefix("/")), route("two", host: "TWO.example", .exact("/x")),
        ])
        #expect(match(hostsOnly, host: "Two.Example", "/x") == "two")
        #expect(match(hostsOnly, host: "two.example", "/y") == nil)
        #expect(match(hostsOnly, host: nil, "/x") == nil)
    }

    @Test("routes with the same path and different methods: the first that takes the method")
    func samePathManyMethods() {
        let table = Self.table([
            route("get", .exact("/x"), methods: ["GET"]),
            route("get-again", .exact("/x"), methods: ["GET"]),
            route("post-or-get", .exact("/x"), methods: ["POST", "GET"]),
            route("none", .exact("/x"), methods: []),
            route("put", .exact("/x"), methods: ["PUT"]),
            route("any", .exact("/x")),
            route("after-any", .exact("/x"), methods: ["DELETE"]),
            route("prefix", .prefix("/x")),
        ])
        #expect(match(table, "/x", method: "GET") == "get")
        #expect(match(table, "/x", method: "POST") == "post-or-get")
        #expect(match(table, "/x", method: "PUT") == "put")
        #expect(match(table, "/x", method: "DELETE") == "any")
        #expect(match(table, "/x/", method: "DELETE") == "prefix")
    }

    @Test("a node with a child for every visible ASCII byte, and paths that end inside a label")
    func wideAndDeep() {
        let routes = (0x21...0x7E).map { byte in
            route("b\(byte)", .prefix("/" + String(decoding: [UInt8(byte)], as: UTF8.self)))
        }
        let table = Self.table([route("long", .prefix("/service-long/path/"))] + routes.filter { $0.name != "b47" })
        #expect(match(table, "/service-long/path/x") == "long")
        #expect(match(table, "/service-long/pat") == "b115")
        #expect(match(table, "/z") == "b122")
        #expect(match(table, "/") == nil)
        #expect(match(table, "//") == nil)
    }

    @Test("no match gives nil (404)")
    func noMatch() {
        #expect(match(Self.table([route("a", .prefix("/a/"))]), "/b") == nil)
        #expect(match(Self.table([]), "/") == nil)
        #expect(match(Self.table([route("w", .prefix("/"), methods: ["POST"])]), "/", method: "GET") == nil)
    }
}
