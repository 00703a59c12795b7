import Testing

@testable import AuthGateway

/// The canonical request target (docs/forwarding.md, "Request targets"): one function for the
/// path, the query and the host, used by every decision and by the forwarded request.
@Suite("RequestTarget")
struct RequestTargetTests {
    static func parse(
        _ uri: String, host: String? = nil, _ settings: PathSettings = PathSettings()
    ) -> Result<RequestTarget, TargetRefusal> {
        do throws(TargetRefusal) {
            return .success(try RequestTarget(uri: uri, hostField: host?[...], settings: settings))
        } catch {
            return .failure(error)
        }
    }

    private func path(_ uri: String, _ settings: PathSettings = PathSettings()) -> String? {
        try? Self.parse(uri, settings).get().path
    }

    @Test(
        "paths made canonical with the default settings",
        arguments: [
            ("/", "/"),
            ("/a/b", "/a/b"),
            ("/%41", "/A"),
            ("/a/%7euser/%5F%2d%2E", "/a/~user/_-."),
            ("/a%20b%3f", "/a%20b%3F"),
            ("/a/%2e%2e/b", "/b"),
            ("/a/%2E%2e/b", "/b"),
            ("/a/.%2e/b", "/b"),
            ("/a/%2e/b", "/a/b"),
            ("/a/./b", "/a/b"),
            ("/a/b/../", "/a/"),
            ("/a/../b/../c", "/c"),
            ("//a//b", "/a/b"),
            ("//a//b/../c", "/a/c"),
            ("/a//../b", "/b"),
            ("/a///", "/a/"),
            ("//", "/"),
            ("/.well-known/jwks.json", "/.well-known/jwks.json"),
            ("/a/..b/c.", "/a/..b/c."),
            ("/a/...", "/a/..."),
            ("/a;b/c", "/a;b/c"),
            ("/a/b;..", "/a/b;.."),
            ("/%C3%A9", "/%C3%A9"),
            ("/%c3%a9/%F0%9F%98%80", "/%C3%A9/%F0%9F%98%80"),
            ("/100%25", "/100%25"),
            ("/100%25off", "/100%25off"),
        ]
    )
    func canonical(_ uri: String, _ expected: String) {
        #expect(path(uri) == expected)
    }

    @Test(
        "without mergeSlashes, empty segments stay and dot segments are resolved as RFC 3986 says",
        arguments: [("//a//b", "//a//b"), ("//a//b/../c", "//a//c"), ("/a//../b", "/a/b"), ("/a///", "/a///")])
    func keepingSlashes(_ uri: String, _ expected: String) {
        #expect(path(uri, PathSettings(mergeSlashes: false)) == expected)
    }

    @Test(
        "spellings that servers read differently are refused",
        arguments: [
            ("/public/..%2Fadmin/users", AmbiguousPath.escapedSlash),
            ("/a%2fb", .escapedSlash),
            ("/a%5Cb", .escapedSlash),
            ("/a%5cb", .escapedSlash),
            ("/a\\b", .backslash),
            ("/public/..\\admin", .backslash),
            ("/a%00b", .controlByte),
            ("/a%0Ab", .controlByte),
            ("/a%0db", .controlByte),
            ("/a%1Fb", .controlByte),
            ("/a%7Fb", .controlByte),
            ("/a/%C0%AE%C0%AE/b", .invalidUTF8),
            ("/%C0%AF", .invalidUTF8),
            ("/%E0%80%AF", .invalidUTF8),
            ("/%ED%A0%80", .invalidUTF8),
            ("/%FF", .invalidUTF8),
            ("/%C3", .invalidUTF8),
            ("/%C3/", .invalidUTF8),
            ("/%F4%90%80%80", .invalidUTF8),
            ("/public/..;/admin", .dotSegmentWithParameter),
            ("/public/.;/admin", .dotSegmentWithParameter),
            ("/public/..;x=1/admin", .dotSegmentWithParameter),
            ("/public/%2e%2e;/admin", .dotSegmentWithParameter),
            ("/public/..%3B/admin", .dotSegmentWithParameter),
            ("/public/..%3b/admin", .dotSegmentWithParameter),
            ("/%252E%252E/admin", .doubleEncoding),
            ("/a%252Fb", .doubleEncoding),
            ("/a%2525", .doubleEncoding),
            ("/a%25%32%46b", .doubleEncoding),
            ("/a%252fb", .doubleEncoding),
            ("/..", .climbsAboveRoot),
            ("/../a", .climbsAboveRoot),
            ("/a/../..", .climbsAboveRoot),
            ("/%2e%2e", .climbsAboveRoot),
            ("/%2E%2E/etc/passwd", .climbsAboveRoot),
            ("/./..", .climbsAboveRoot),
            ("//..", .climbsAboveRoot),
            // Trimmed to "/admin/" where trailing dots are trimmed (Caddy before 2.7, Windows),
            // resolved to "/admin" by Python's normpath.
            ("/admin/..", .endsInDotSegment),
            ("/a/b/..", .endsInDotSegment),
            ("/admin/%2e%2e", .endsInDotSegment),
            ("/admin/x/.%2E", .endsInDotSegment),
            ("/admin/.", .endsInDotSegment),
            ("/a/b/%2e", .endsInDotSegment),
        ])
    func ambiguous(_ uri: String, _ reason: AmbiguousPath) {
        #expect(Self.parse(uri) == .failure(.ambiguousPath(reason)))
    }

    @Test("escapedSlashes: decode turns %2F and %5C into a slash before merging and resolving")
    func decodingEscapedSlashes() {
        let decode = PathSettings(escapedSlashes: .decode)
        #expect(path("/public/..%2Fadmin/users", decode) == "/admin/users")
        #expect(path("/a%5Cb", decode) == "/a/b")
        #expect(path("/a%2F%2Fb", decode) == "/a/b")
        #expect(path("/a%2F%2Fb", PathSettings(escapedSlashes: .decode, mergeSlashes: false)) == "/a//b")
        // A raw backslash is never a slash: refused whatever the setting.
        #expect(Self.parse("/a\\b", decode) == .failure(.ambiguousPath(.backslash)))
        #expect(Self.parse("/%2F..%2F..", decode) == .failure(.ambiguousPath(.climbsAboveRoot)))
    }

    @Test("escapedSlashes: keep leaves %2F and %5C in their segment, upper-cased")
    func keepingEscapedSlashes() {
        let keep = PathSettings(escapedSlashes: .keep)
        #expect(path("/public/..%2fadmin/users", keep) == "/public/..%2Fadmin/users")
        #expect(path("/a%5cb/../c", keep) == "/c")
        #expect(Self.parse("/a%252F", keep) == .failure(.ambiguousPath(.doubleEncoding)))
    }

    @Test("malformed percent escapes are not a target", arguments: ["/%zz", "/%4", "/%", "/a%2", "/a%G1", "/%%41"])
    func badPercentEncoding(_ uri: String) {
        #expect(Self.parse(uri) == .failure(.malformed))
    }

    @Test(
        "fragments, spaces, control and non-ASCII bytes are not a target",
        arguments: ["/a#b", "/a?b#c", "/a b", "/a\tb", "/caf\u{E9}", "/a?x=\u{7F}", "", "a/b", "*"])
    func invalidTarget(_ uri: String) {
        #expect(Self.parse(uri) == .failure(.malformed))
    }

    @Test("the query is kept verbatim and apart from the path")
    func queryVerbatim() throws {
        let target = try Self.parse("/a/./b?x=%41&y=/../z&&=").get()
        #expect(target.path == "/a/b")
        #expect(target.query == "x=%41&y=/../z&&=")
        #expect(try Self.parse("/a?").get().query == "")
        #expect(try Self.parse("/a").get().query == nil)
        // The query is not the path's business: %2F, bad escapes and backslashes pass as sent.
        #expect(try Self.parse("/a?q=%zz%2F\\").get().query == "q=%zz%2F\\")
        #expect(try Self.parse("/a?q=%zz").get().path == "/a")
    }

    @Test("absolute-form targets carry their host, which replaces Host for the backend")
    func absoluteForm() throws {
        let target = try Self.parse("http://API.example.com.:8080/a/../b?q=1").get()
        #expect(target.host == CanonicalHost(name: "api.example.com", port: "8080"))
        #expect(target.backendHost == "api.example.com:8080")
        #expect(target.path == "/b")
        #expect(target.query == "q=1")

        let bare = try Self.parse("HTTPS://h").get()
        #expect(bare.host?.name == "h")
        #expect(bare.backendHost == "h")
        #expect(bare.path == "/")
        #expect(bare.query == nil)

        let queryOnly = try Self.parse("http://h?x=1").get()
        #expect(queryOnly.path == "/")
        #expect(queryOnly.query == "x=1")

        // A Host naming the same host is fine; another host is refused, not guessed.
        #expect(try Self.parse("http://h/a", host: "H:80").get().host?.name == "h")
        #expect(Self.parse("http://a.example/x", host: "b.example") == .failure(.ambiguousHost(.differsFromAuthority)))
        #expect(try Self.parse("/a").get().host == nil)
    }

    @Test("bad absolute-form targets are refused", arguments: ["ftp://h/a", "http:/h/a", "h/a"])
    func badAbsoluteForm(_ uri: String) {
        #expect(Self.parse(uri) == .failure(.malformed))
    }

    @Test("an absolute-form authority is held to the Host rules", arguments: ["http:///a", "http://user@h/a"])
    func badAuthority(_ uri: String) {
        #expect(
            Self.parse(uri) == .failure(.ambiguousHost(.empty))
                || Self.parse(uri) == .failure(.ambiguousHost(.userinfo)))
    }

    @Test("the Host field: the backend keeps a canonical one as sent, gets a rewritten one otherwise")
    func hostField() throws {
        let plain = try Self.parse("/", host: "api.example.com:8443").get()
        #expect(plain.host == CanonicalHost(name: "api.example.com", port: "8443"))
        #expect(plain.backendHost == nil)
        let dotted = try Self.parse("/", host: "Admin.Example.com.:80").get()
        #expect(dotted.host?.name == "admin.example.com")
        #expect(dotted.backendHost == "admin.example.com:80")
        #expect(try Self.parse("/", host: "h:").get().backendHost == "h")
    }

    @Test("the upstream URI: canonical path, optional prefix stripped, original query")
    func upstreamURI() throws {
        let target = try Self.parse("/api/v1/%41?q=%41").get()
        #expect(target.upstreamURI(strippingPrefix: nil) == "/api/v1/A?q=%41")
        #expect(target.upstreamURI(strippingPrefix: "/api") == "/v1/A?q=%41")
        #expect(target.upstreamURI(strippingPrefix: "/api/") == "/v1/A?q=%41")
        #expect(target.upstreamURI(strippingPrefix: "/other") == "/api/v1/A?q=%41")
        #expect(try Self.parse("/api").get().upstreamURI(strippingPrefix: "/api") == "/")
        #expect(try Self.parse("/api/").get().upstreamURI(strippingPrefix: "/api/") == "/")
        #expect(try Self.parse("/x?").get().upstreamURI(strippingPrefix: nil) == "/x?")
    }

    /// The one scan of an origin-form target (`RequestTarget`) against the steps it stands for:
    /// refuse a byte outside visible ASCII or a `#`, split at the first `?`, and make the path
    /// canonical with `CanonicalPath.make` (whose own fast path then decides). Random spellings of
    /// the confusing pieces, with a query that holds them too.
    @Test func theOneScanDecidesAsTheStepsOneByOne() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<20_000 {
            var uri = CanonicalPathPropertyTests.spelling(&generator)
            if Bool.random(using: &generator) {
                uri += "?" + CanonicalPathPropertyTests.spelling(&generator).dropFirst()
            }
            if Int.random(in: 0..<20, using: &generator) == 0 { uri += "#f" }
            let settings = CanonicalPathPropertyTests.settings.randomElement(using: &generator)!
            let expected: Result<(String, Substring?), TargetRefusal>
            if uri.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F || $0 == UInt8(ascii: "#") }) {
                expected = .failure(.malformed)
            } else {
                let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
                do throws(TargetRefusal) {
                    let path = try CanonicalPath.make(parts[0], settings: settings)
                    expected = .success((path, parts.count > 1 ? parts[1] : nil))
                } catch {
                    expected = .failure(error)
                }
            }
            switch (Self.parse(uri, settings), expected) {
            case (.success(let target), .success(let (path, query))):
                #expect(target.path == path && target.query == query, "seed \(seed): \(uri)")
            case (.failure(let refusal), .failure(let expectedRefusal)):
                #expect(refusal == expectedRefusal, "seed \(seed): \(uri)")
            case (let got, _):
                Issue.record("seed \(seed): \(uri) gave \(got), expected \(expected)")
            }
        }
    }
}
