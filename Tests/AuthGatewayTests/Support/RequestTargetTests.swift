import Testing

@testable import AuthGateway

@Suite("RequestTarget")
struct RequestTargetTests {
    private func parse(_ uri: String) -> Result<RequestTarget, RequestTarget.ParseError> {
        do throws(RequestTarget.ParseError) {
            return .success(try RequestTarget(parsing: uri))
        } catch {
            return .failure(error)
        }
    }

    private func path(_ uri: String) -> String? {
        try? parse(uri).get().path
    }

    @Test(
        "path normalization (docs/configuration.md)",
        arguments: [
            ("/", "/"),
            ("/a/b", "/a/b"),
            ("/%41", "/A"),
            ("/a/%7euser/%5F%2d%2E", "/a/~user/_-."),
            ("/a%2Fb", "/a%2Fb"),
            ("/a%2fb", "/a%2Fb"),
            ("/a%20b%3f", "/a%20b%3F"),
            ("/a/%2e%2e/b", "/b"),
            ("/a/%2E%2e/b", "/b"),
            ("/a/.%2e/b", "/b"),
            ("/a/%2e/b", "/a/b"),
            ("/a/./b", "/a/b"),
            ("/a/b/..", "/a/"),
            ("/a/b/../", "/a/"),
            ("/a/b/.", "/a/b/"),
            ("/a/..", "/"),
            ("/a/../b/../c", "/c"),
            ("//a//b", "//a//b"),
            ("//a//b/../c", "//a//c"),
            ("/a//../b", "/a/b"),
            ("/.well-known/jwks.json", "/.well-known/jwks.json"),
            ("/a/..b/c.", "/a/..b/c."),
            ("/a/...", "/a/..."),
            ("/%C3%A9", "/%C3%A9"),
        ]
    )
    func normalizes(_ uri: String, _ expected: String) {
        #expect(path(uri) == expected)
    }

    @Test(
        "a path that climbs above the root is refused",
        arguments: ["/..", "/../a", "/a/../..", "/a/../../b", "/%2e%2e", "/%2E%2E/etc/passwd", "/./.."])
    func climbsAboveRoot(_ uri: String) {
        #expect(parse(uri) == .failure(.climbsAboveRoot))
    }

    @Test("malformed percent escapes are refused", arguments: ["/%zz", "/%4", "/%", "/a%2", "/a%G1", "/%%41"])
    func badPercentEncoding(_ uri: String) {
        #expect(parse(uri) == .failure(.invalidPercentEncoding))
    }

    @Test(
        "fragments, spaces, control and non-ASCII bytes are refused",
        arguments: ["/a#b", "/a?b#c", "/a b", "/a\tb", "/caf\u{E9}", "/a?x=\u{7F}", "", "a/b", "*"])
    func invalidTarget(_ uri: String) {
        #expect(parse(uri) == .failure(.invalidTarget))
    }

    @Test("the query is kept verbatim and apart from the path")
    func queryVerbatim() throws {
        let target = try parse("/a/./b?x=%41&y=/../z&&=").get()
        #expect(target.path == "/a/b")
        #expect(target.query == "x=%41&y=/../z&&=")
        #expect(try parse("/a?").get().query == "")
        #expect(try parse("/a").get().query == nil)
        // A bad escape in the query is not the path's business.
        #expect(try parse("/a?q=%zz").get().query == "q=%zz")
        #expect(try parse("/a?q=%zz").get().path == "/a")
    }

    @Test("absolute-form targets carry their authority")
    func absoluteForm() throws {
        let target = try parse("http://API.example.com:8080/a/../b?q=1").get()
        #expect(target.authority == "API.example.com:8080")
        #expect(target.path == "/b")
        #expect(target.query == "q=1")

        let bare = try parse("HTTPS://h").get()
        #expect(bare.authority == "h")
        #expect(bare.path == "/")
        #expect(bare.query == nil)

        let queryOnly = try parse("http://h?x=1").get()
        #expect(queryOnly.path == "/")
        #expect(queryOnly.query == "x=1")

        #expect(try parse("/a").get().authority == nil)
    }

    @Test(
        "bad absolute-form targets are refused",
        arguments: ["http:///a", "http://user@h/a", "ftp://h/a", "http:/h/a", "h/a"])
    func badAbsoluteForm(_ uri: String) {
        #expect(parse(uri) == .failure(.invalidTarget))
    }

    @Test("the upstream URI: normalized path, optional prefix stripped, original query")
    func upstreamURI() throws {
        let target = try parse("/api/v1/%41?q=%41").get()
        #expect(target.upstreamURI(strippingPrefix: nil) == "/api/v1/A?q=%41")
        #expect(target.upstreamURI(strippingPrefix: "/api") == "/v1/A?q=%41")
        #expect(target.upstreamURI(strippingPrefix: "/api/") == "/v1/A?q=%41")
        #expect(target.upstreamURI(strippingPrefix: "/other") == "/api/v1/A?q=%41")
        #expect(try parse("/api").get().upstreamURI(strippingPrefix: "/api") == "/")
        #expect(try parse("/api/").get().upstreamURI(strippingPrefix: "/api/") == "/")
        #expect(try parse("/x?").get().upstreamURI(strippingPrefix: nil) == "/x?")
    }
}
