import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("HeaderRewriter")
struct HeaderRewriterTests {
    /// The forwarding policy of a configuration with identity headers, the default strip
    /// prefixes and a trusted proxy network (also `UpstreamRequestHeadTests`').
    static let policy: ForwardingPolicy = {
        let text = #"""
            {
              "listener": { "port": 8080 },
              "tokens": { "issuers": [ { "issuer": "https://issuer.test", "jwksURL": "http://127.0.0.1:9000/jwks" } ] },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "all", "pathPrefix": "/", "backend": "api" } ],
              "identityHeaders": { "X-Tenant": "claims.tenant", "X-User-Subject": "claims.sub" },
              "trustedProxies": ["10.0.0.0/8"]
            }
            """#
        return ForwardingPolicy(
            configuration: try! ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/"))
    }()

    private let untrusted = ClientConnectionInfo(peerIP: "203.0.113.7", peerIsTrustedProxy: false, isTLS: false)
    private let trusted = ClientConnectionInfo(peerIP: "10.1.2.3", peerIsTrustedProxy: true, isTLS: true)

    private func rewrite(
        _ headers: [(String, String)],
        framing: BodyFraming = .none,
        connection: ClientConnectionInfo? = nil,
        requestID: String = "req-1",
        identity: [(name: String, value: String)] = [],
        tokenEdits: [TokenEdit] = []
    ) -> HTTPHeaders {
        HeaderRewriter.upstreamRequestHeaders(
            HTTPHeaders(headers), framing: framing, policy: Self.policy, connection: connection ?? untrusted,
            requestID: requestID, identity: identity, tokenEdits: tokenEdits)
    }

    private func names(_ headers: HTTPHeaders) -> [String] { headers.map { $0.name.lowercased() } }

    @Test("the policy lower-cases identity header names and prefixes")
    func policy() {
        #expect(Self.policy.strippedNames == ["x-tenant", "x-user-subject"])
        #expect(Self.policy.strippedPrefixes == ["x-user-", "x-auth-"])
        #expect(Self.policy.trustedProxies.count == 1)
    }

    @Test("hop-by-hop headers and headers named in Connection are removed; others kept in order")
    func hopByHop() {
        let output = rewrite([
            ("Host", "api.example.com"), ("Connection", "keep-alive, X-Hop, Upgrade"), ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"), ("TE", "trailers"), ("Trailer", "X-Checksum"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "websocket"), ("Proxy-Authorization", "Basic x"), ("Expect", "100-continue"), ("x-hop", "1"),
            ("Accept", "*/*"), ("Content-Length", "3"), ("X-Custom", "a"), ("x-custom", "b"),
        ])
        let kept = output.filter {
            !$0.name.lowercased().hasPrefix("x-forwarded-") && $0.name.lowercased() != "x-request-id"
        }
        #expect(kept.map { $0.name } == ["Host", "Accept", "Content-Length", "X-Custom", "x-custom"])
        #expect(output["X-Custom"] == ["a", "b"])
    }

    @Test("Connection tokens are matched case-insensitively and with spaces around commas")
    func connectionTokens() {
        let output = rewrite([
            ("connection", "X-A ,x-b"), ("Connection", "X-C"), ("x-a", "1"), ("X-B", "2"), ("X-c", "3"), ("X-D", "4"),
        ])
        #expect(output["X-A"].isEmpty && output["X-B"].isEmpty && output["X-C"].isEmpty)
        #expect(output["X-D"] == ["4"])
    }

    @Test("client-supplied identity headers and prefixed headers are stripped, in any case")
    func identityStripped() {
        let output = rewrite(
            [
                ("X-Tenant", "evil"), ("x-user-subject", "admin"), ("X-USER-ID", "1"), ("x-auth-role", "root"),
                ("X-Auth-", "x"),
                ("X-Userx", "kept"), ("X-Authorization-Hint", "kept"), ("Authorization", "Bearer t"),
            ], identity: [("X-User-Subject", "user-42"), ("X-Tenant", "t-1")])
        #expect(output["X-Tenant"] == ["t-1"])
        #expect(output["X-User-Subject"] == ["user-42"])
        #expect(output["X-User-Id"].isEmpty)
        #expect(output["X-Auth-Role"].isEmpty)
        #expect(output["X-Auth-"].isEmpty)
        #expect(output["X-Userx"] == ["kept"])
        #expect(output["X-Authorization-Hint"] == ["kept"])
        #expect(output["Authorization"] == ["Bearer t"])
    }

    @Test("identity headers are added after the forwarded ones, in the given order")
    func identityOrder() {
        let output = rewrite([("Host", "h")], identity: [("X-User-Subject", "s"), ("X-Tenant", "t")])
        let tail = Array(names(output).suffix(2))
        #expect(tail == ["x-user-subject", "x-tenant"])
    }

    @Test("from an untrusted peer, X-Forwarded-* are replaced by the connection's facts")
    func forwardedUntrusted() {
        let output = rewrite([
            ("Host", "api.example.com:8443"), ("X-Forwarded-For", "1.2.3.4"), ("x-forwarded-for", "5.6.7.8"),
            ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "evil.example"),
        ])
        #expect(output["X-Forwarded-For"] == ["203.0.113.7"])
        #expect(output["X-Forwarded-Proto"] == ["http"])
        // The canonical host, without its port (docs/forwarding.md, "The canonical host").
        #expect(output["X-Forwarded-Host"] == ["api.example.com"])
    }

    @Test("from a trusted proxy, X-Forwarded-For is appended to and Proto/Host are kept")
    func forwardedTrusted() {
        let output = rewrite(
            [
                ("Host", "internal:8080"), ("X-Forwarded-For", "1.2.3.4, 5.6.7.8"), ("X-Forwarded-For", "9.9.9.9"),
                ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "api.example.com"),
            ], connection: ClientConnectionInfo(peerIP: "10.1.2.3", peerIsTrustedProxy: true, isTLS: false))
        #expect(output["X-Forwarded-For"] == ["1.2.3.4, 5.6.7.8, 9.9.9.9, 10.1.2.3"])
        #expect(output["X-Forwarded-Proto"] == ["https"])
        #expect(output["X-Forwarded-Host"] == ["api.example.com"])
    }

    @Test("a trusted proxy without forwarded headers gets the connection's facts")
    func forwardedTrustedWithoutHeaders() {
        let output = rewrite([("Host", "h")], connection: trusted)
        #expect(output["X-Forwarded-For"] == ["10.1.2.3"])
        #expect(output["X-Forwarded-Proto"] == ["https"])
        #expect(output["X-Forwarded-Host"] == ["h"])
    }

    @Test("without Host, no X-Forwarded-Host")
    func noHost() {
        #expect(rewrite([("Accept", "*/*")])["X-Forwarded-Host"].isEmpty)
    }

    @Test("X-Request-Id is set to the request's id, exactly once")
    func requestID() {
        let output = rewrite([("X-Request-Id", "client-1"), ("x-request-id", "client-2")], requestID: "gw-9")
        #expect(output["X-Request-Id"] == ["gw-9"])
    }

    @Test("token edits: remove the Authorization header")
    func removeAuthorization() {
        let output = rewrite(
            [("Authorization", "Bearer old"), ("authorization", "Bearer old"), ("Accept", "*/*")],
            tokenEdits: [TokenEdit(location: .header(name: "Authorization", bearer: true), replacement: nil)])
        #expect(output["Authorization"].isEmpty)
        #expect(output["Accept"] == ["*/*"])
    }

    @Test("token edits: replace the token in its header, keeping the scheme")
    func replaceHeaderToken() {
        let bearer = rewrite(
            [("authorization", "bearer old")],
            tokenEdits: [TokenEdit(location: .header(name: "Authorization", bearer: true), replacement: "new")])
        #expect(bearer["Authorization"] == ["Bearer new"])
        let raw = rewrite(
            [("Authorization", "old")],
            tokenEdits: [TokenEdit(location: .header(name: "Authorization", bearer: false), replacement: "new")])
        #expect(raw["Authorization"] == ["new"])
    }

    @Test("token edits: replace and remove cookies, keeping the others")
    func cookieEdits() {
        let replaced = rewrite(
            [("Cookie", "theme=dark; access_token=old; lang=en")],
            tokenEdits: [TokenEdit(location: .cookie(name: "access_token"), replacement: "new")])
        #expect(replaced["Cookie"] == ["theme=dark; access_token=new; lang=en"])

        let removed = rewrite(
            [("Cookie", "theme=dark; refresh_token=rt"), ("Cookie", "refresh_token=rt")],
            tokenEdits: [TokenEdit(location: .cookie(name: "refresh_token"), replacement: nil)])
        #expect(removed["Cookie"] == ["theme=dark"])
    }

    @Test("token edits: several at once (new access token in, refresh token out)")
    func severalEdits() {
        let output = rewrite(
            [
                ("Authorization", "Bearer old"), ("X-Refresh-Token", "rt"),
                ("Cookie", "access_token=old; refresh_token=rt; a=1"),
            ],
            tokenEdits: [
                TokenEdit(location: .header(name: "Authorization", bearer: true), replacement: "new"),
                TokenEdit(location: .header(name: "X-Refresh-Token", bearer: false), replacement: nil),
                TokenEdit(location: .cookie(name: "refresh_token"), replacement: nil),
                TokenEdit(location: .cookie(name: "access_token"), replacement: nil),
            ])
        #expect(output["Authorization"] == ["Bearer new"])
        #expect(output["X-Refresh-Token"].isEmpty)
        #expect(output["Cookie"] == ["a=1"])
    }

    @Test("chunked framing adds exactly one Transfer-Encoding: chunked")
    func chunkedFraming() {
        let chunked = rewrite([("Transfer-Encoding", "chunked"), ("Host", "h")], framing: .chunked)
        #expect(chunked["Transfer-Encoding"] == ["chunked"])
        let fixed = rewrite([("Content-Length", "5"), ("Host", "h")], framing: .contentLength(5))
        #expect(fixed["Transfer-Encoding"].isEmpty)
        #expect(fixed["Content-Length"] == ["5"])
    }
}
