import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A client forging the headers that describe a request, through the real nginx and Caddy of
/// docs/authorizer.md's snippets (`FrontProxy`): the gateway decides on what the proxy saw —
/// the method, target, host and address — never on what the client wrote, and no identity
/// header the client wrote reaches the application.
@Suite(
    "Authorizer: forged headers through real nginx and Caddy", .serialized, .awaitsCleanups,
    .timeLimit(.minutes(3)))
struct FrontProxySpoofingTests {
    /// `/admin/` a token, `/internal/` a token from 203.0.113.0/24, `/limited/` one request per
    /// client address, `/public/` anyone, anything else a token; identity headers X-User-Subject
    /// and X-User-Email (the two the snippets copy).
    static func start(_ kind: FrontProxy.Kind) async throws -> (GatewayFixture, FrontProxy) {
        let gateway = try await GatewayFixture.start { config in
            config["authorizer"] = [:]
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "claims.email"]
            config["routes"] = [
                ["name": "admin", "pathPrefix": "/admin/", "backend": "api"],
                [
                    "name": "internal", "pathPrefix": "/internal/", "backend": "api",
                    "require": ["client.ip": ["cidr": ["203.0.113.0/24"]]],
                ],
                ["name": "limited", "pathPrefix": "/limited/", "backend": "api", "auth": "none"],
                ["name": "public", "pathPrefix": "/public/", "backend": "api", "auth": "none"],
                ["name": "api", "pathPrefix": "/", "backend": "api"],
            ]
            config["rateLimits"] = [
                RateLimitIntegrationTests.limit("per-address", key: "client.ip", burst: 1, routes: ["limited"])
            ]
        }
        do {
            let proxy = try await FrontProxy.start(kind, gatewayPort: gateway.port, backendPort: gateway.backend.port)
            return (gateway, proxy)
        } catch {
            await gateway.stop()
            throw error
        }
    }

    /// Every header a client might forge to describe another request or another client.
    static let forgedDescription: [(String, String)] = [
        ("X-Original-URI", "/public/x"), ("X-Original-URL", "http://shop.example.com/public/x"),
        ("X-Original-Method", "OPTIONS"), ("X-Forwarded-Uri", "/public/x"), ("X-Forwarded-Method", "OPTIONS"),
        ("X-Forwarded-Host", "public.example.com"), ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Prefix", "/public"), ("X-Real-IP", "203.0.113.7"), ("X-Forwarded-For", "203.0.113.7"),
        ("Forwarded", "for=203.0.113.7;host=public.example.com"),
    ]

    static let forgedIdentity: [(String, String)] = [
        ("X-User-Subject", "admin"), ("X-User-Email", "forged@example.com"),
    ]

    @Test(arguments: [FrontProxy.Kind.nginx, .caddy])
    func theDecisionIsOnWhatTheProxySaw(_ kind: FrontProxy.Kind) async throws {
        let (gateway, proxy) = try await Self.start(kind)
        atTestEnd { await gateway.stop() }
        atTestEnd { await proxy.stop() }
        // A forged description of a public request does not open an admin one.
        let admin = try await proxy.send(.get("/admin/x", headers: Self.forgedDescription))
        #expect(admin.status == 401, "\(kind): \(admin.status) \(proxy.log.suffix(1500))")
        let api = try await proxy.send(TestRequest(.OPTIONS, "/api/orders", headers: Self.forgedDescription))
        #expect(api.status == 401, "\(kind): OPTIONS \(api.status)")
        // A forged address does not satisfy a `client.ip` policy …
        let fromElsewhere = try await proxy.send(
            .get("/internal/x", token: TestKeys.token(), headers: Self.forgedDescription))
        #expect(fromElsewhere.status == 403, "\(kind): \(fromElsewhere.status)")
        // … nor make a rate-limit key of its own: two forged addresses share the real one's budget.
        var first = Self.forgedDescription
        first.removeAll { $0.0 == "X-Real-IP" || $0.0 == "X-Forwarded-For" }
        let once = try await proxy.send(.get("/limited/a", headers: first + [("X-Real-IP", "198.51.100.1")]))
        #expect(once.status == 200, "\(kind): \(once.status)")
        let twice = try await proxy.send(
            .get("/limited/a", headers: first + [("X-Real-IP", "198.51.100.2"), ("X-Forwarded-For", "198.51.100.2")]))
        switch kind {
        case .nginx:
            #expect(twice.status == 403, "nginx passes on only 401 and 403")
        case .caddy:
            #expect(twice.status == 429)
            #expect(twice.header("Retry-After") != nil)
        }
        #expect(gateway.backend.requestCount == 1)
    }

    /// No forged identity header reaches the application: not when the gateway's allow carries
    /// it (an identity), and not when there is none (a route without a token). Caddy's
    /// `copy_headers` sets a header only from the gateway's answer and leaves the client's in
    /// place otherwise (caddyserver/caddy#6608) — or, in Debian's Caddy 2.6, its placeholder
    /// unexpanded — so the snippet removes the client's first and the gateway answers every
    /// identity header, empty when there is no identity (docs/authorizer.md).
    @Test(arguments: [FrontProxy.Kind.nginx, .caddy])
    func noForgedIdentityReachesTheApplication(_ kind: FrontProxy.Kind) async throws {
        let (gateway, proxy) = try await Self.start(kind)
        atTestEnd { await gateway.stop() }
        atTestEnd { await proxy.stop() }
        let forged = Self.forgedIdentity + [("X-User-Roles", "admin")]
        let anonymous = try await proxy.send(.get("/public/x", headers: forged))
        #expect(anonymous.status == 200, "\(kind): \(anonymous.status) \(proxy.log.suffix(1500))")
        for name in ["x-user-subject", "x-user-email"] {
            // Absent, or empty: never the client's value, never a placeholder.
            #expect(
                anonymous.echoedHeader(name).allSatisfy { $0.isEmpty },
                "\(kind) \(name): \(anonymous.echoedHeader(name))")
        }
        let identified = try await proxy.send(.get("/api/x", token: TestKeys.token(), headers: forged))
        #expect(identified.status == 200)
        #expect(identified.echoedHeader("x-user-subject") == ["user-42"], "\(kind)")
        #expect(identified.echoedHeader("x-user-email") == ["user-42@example.com"], "\(kind)")
        // A token without an email claim: the gateway's allow carries an empty X-User-Email.
        let withoutEmail = try await proxy.send(
            .get("/api/x", token: TestKeys.token(extra: ["email": .null]), headers: forged))
        #expect(withoutEmail.status == 200)
        #expect(withoutEmail.echoedHeader("x-user-subject") == ["user-42"], "\(kind)")
        #expect(
            withoutEmail.echoedHeader("x-user-email").allSatisfy { $0.isEmpty },
            "\(kind): \(withoutEmail.echoedHeader("x-user-email"))")
        if kind == .caddy {
            // The snippet removes every X-User- header the client sent, as the gateway does itself.
            #expect(anonymous.echoedHeader("x-user-roles").isEmpty)
        }
    }

    /// nginx `auth_request` passes on only 401 and 403 (any other status is its own 500): a
    /// malformed or ambiguous original reaches the client as 403, the real status in the
    /// gateway's `X-Auth-Gateway-Status`.
    @Test func nginxGets403ForEveryRefusedOriginal() async throws {
        let (gateway, nginx) = try await Self.start(.nginx)
        atTestEnd { await gateway.stop() }
        atTestEnd { await nginx.stop() }
        let cases: [(String, [UInt8], [UInt8])] = [
            ("userinfo in Host", Array("/public/x".utf8), Array("user@admin.example.com".utf8)),
            ("non-ASCII Host", Array("/public/x".utf8), [0xC3, 0xA9] + Array(".example.com".utf8)),
            ("raw non-ASCII byte in the path", Array("/public/".utf8) + [0xFF], Array("shop.example.com".utf8)),
            ("%2F", Array("/public/..%2Fadmin/x".utf8), Array("shop.example.com".utf8)),
            ("overlong UTF-8", Array("/public/%C0%AE%C0%AE/admin/x".utf8), Array("shop.example.com".utf8)),
            ("..;", Array("/public/..;/admin/x".utf8), Array("shop.example.com".utf8)),
            ("double encoding", Array("/public/%252e%252e/admin/x".utf8), Array("shop.example.com".utf8)),
        ]
        for (name, target, host) in cases {
            let response = try await RawExchange.send(port: nginx.port, RawExchange.get(target, host: host))
            #expect(response.status == 403, "\(name): nginx answered \(response.status)")
        }
        // A path above the root and an escaped NUL nginx refuses itself; never a 500.
        for target in ["/public/../../x", "/public/%00/x"] {
            let response = try await RawExchange.send(
                port: nginx.port, RawExchange.get(Array(target.utf8), host: Array("shop.example.com".utf8)))
            #expect(response.status == 400 || response.status == 403, "\(target): \(response.status)")
        }
        #expect(gateway.backend.requestCount == 0)

        // The gateway's own answer to each call as nginx makes it.
        for (uri, host) in [
            ("/public/x", "user@admin.example.com"), ("/public/\u{FF}", "shop.example.com"),
            ("/public/..%2Fadmin/x", "shop.example.com"), ("/../x", "shop.example.com"),
            ("/public/%C0%AE", "shop.example.com"), ("/a/..;/b", "shop.example.com"),
            ("/public/%00", "shop.example.com"),
        ] {
            let call = TestRequest(
                .GET, "/.gateway/authz/auth-request",
                headers: [
                    ("X-Original-Method", "GET"), ("X-Original-URI", uri), ("X-Forwarded-Host", host),
                    ("X-Forwarded-Proto", "http"), ("X-Real-IP", "127.0.0.1"),
                ])
            let answer = try await gateway.send(call)
            #expect(answer.status == 403, "\(uri) \(host): \(answer.status)")
            #expect(answer.header("X-Auth-Gateway-Status") == "400", "\(uri) \(host)")
        }
    }
}
