import Foundation
import NIOHTTP2
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Authorizer mode's HTTP contracts over real sockets (docs/authorizer.md): the calls exactly
/// as nginx, Traefik/Caddy and Envoy make them, on HTTP/1.1 and h2c; decided by the route table
/// and the rules of a proxied request; the backend never contacted.
@Suite("Authorizer: HTTP contracts (real sockets)", .awaitsCleanups)
struct AuthorizerHTTPTests {
    static let prefix = "/.gateway/authz/"

    /// `/api/` needs a token (identity header X-User-Subject), `/admin/` a role, `/limited/`
    /// allows one request per subject, `/public/` anyone.
    static func start(_ extra: (inout JSONObject) -> Void = { _ in }) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["authorizer"] = [:]
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "claims.email"]
            config["routes"] = [
                ["name": "admin", "pathPrefix": "/admin/", "backend": "api", "require": ["claims.role": "admin"]],
                ["name": "limited", "pathPrefix": "/limited/", "backend": "api"],
                ["name": "public", "pathPrefix": "/public/", "backend": "api", "auth": "none"],
                ["name": "api", "pathPrefix": "/", "backend": "api"],
            ]
            config["rateLimits"] = [
                RateLimitIntegrationTests.limit("per-user", key: "claims.sub", burst: 1, routes: ["limited"])
            ]
            extra(&config)
        }
    }

    static func nginx(_ method: String, _ uri: String, token: String? = nil) -> TestRequest {
        var headers = [
            ("X-Original-Method", method), ("X-Original-URI", uri), ("X-Forwarded-Host", "shop.example.com"),
            ("X-Forwarded-Proto", "https"), ("X-Real-IP", "203.0.113.7"),
        ]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return TestRequest(.GET, Self.prefix + "auth-request", headers: headers)
    }

    static func forwardAuth(_ method: String, _ uri: String, token: String? = nil) -> TestRequest {
        var headers = [
            ("X-Forwarded-Method", method), ("X-Forwarded-Uri", uri), ("X-Forwarded-Host", "shop.example.com"),
            ("X-Forwarded-Proto", "https"), ("X-Forwarded-For", "203.0.113.7"),
        ]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return TestRequest(.GET, Self.prefix + "forward-auth", headers: headers)
    }

    @Test func nginxAuthRequestAllowsWithTheIdentityHeadersAndRefusesAs401Or403() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let allowed = try await gateway.send(Self.nginx("POST", "/api/orders?id=7", token: TestKeys.token()))
        #expect(allowed.status == 200)
        #expect(allowed.header("X-User-Subject") == "user-42")
        #expect(allowed.header("X-User-Email") == "user-42@example.com")
        #expect(allowed.bodyBytes == 0)

        let missing = try await gateway.send(Self.nginx("GET", "/api/orders"))
        #expect(missing.status == 401)
        #expect(missing.header("WWW-Authenticate") == "Bearer realm=\"auth-gateway\"")
        let forbidden = try await gateway.send(Self.nginx("GET", "/admin/x", token: TestKeys.token()))
        #expect(forbidden.status == 403)

        // A rate-limit refusal is a 403 for nginx, the real status beside it.
        _ = try await gateway.send(Self.nginx("GET", "/limited/a", token: TestKeys.token(subject: "limited-1")))
        let limited = try await gateway.send(
            Self.nginx("GET", "/limited/a", token: TestKeys.token(subject: "limited-1")))
        #expect(limited.status == 403)
        #expect(limited.header("X-Auth-Gateway-Status") == "429")
        #expect(limited.header("Retry-After") != nil)

        let open = try await gateway.send(Self.nginx("GET", "/public/x"))
        #expect(open.status == 200)
        // No identity: every identity header answered empty, so that no proxy keeps a client's.
        #expect(open.headers["X-User-Subject"] == [""])
        #expect(open.headers["X-User-Email"] == [""])
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func forwardAuthAnswersTheClientsExactRefusal() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let allowed = try await gateway.send(Self.forwardAuth("DELETE", "/api/items/3", token: TestKeys.token()))
        #expect(allowed.status == 200)
        #expect(allowed.header("X-User-Subject") == "user-42")
        let missing = try await gateway.send(Self.forwardAuth("GET", "/api/items"))
        #expect(missing.status == 401)
        #expect(missing.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.missing")
        _ = try await gateway.send(Self.forwardAuth("GET", "/limited/b", token: TestKeys.token(subject: "limited-2")))
        let limited = try await gateway.send(
            Self.forwardAuth("GET", "/limited/b", token: TestKeys.token(subject: "limited-2")))
        #expect(limited.status == 429)
        #expect(limited.header("Retry-After") != nil)
        #expect(gateway.backend.requestCount == 0)
    }

    /// Envoy's HTTP `ext_authz`: its own method and the original path after the prefix; its
    /// Content-Length describes its own call (a body it was told to buffer), not the request.
    @Test func envoyExtAuthzOverHTTP() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let allowed = try await gateway.send(
            TestRequest(
                .POST, Self.prefix + "ext-authz/api/orders?x=1",
                headers: [
                    ("Host", "shop.example.com"), ("X-Forwarded-Proto", "https"),
                    ("Authorization", "Bearer \(TestKeys.token())"),
                ], body: "{\"id\":1}"))
        #expect(allowed.status == 200)
        #expect(allowed.header("X-User-Subject") == "user-42")
        let forbidden = try await gateway.send(
            TestRequest(
                .GET, Self.prefix + "ext-authz/admin/x",
                headers: [("Host", "shop.example.com"), ("Authorization", "Bearer \(TestKeys.token())")]))
        #expect(forbidden.status == 403)
        #expect(forbidden.json?["type"]?.stringValue == "urn:auth-gateway:problem:access.forbidden")
        #expect(gateway.backend.requestCount == 0)
    }

    /// 400 naming the header; for nginx (which turns any status but 401 and 403 into its own
    /// 500) a 403 with the 400 in `X-Auth-Gateway-Status`, as every refusal.
    @Test func missingContractHeadersAnd400NamingThem() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(
            TestRequest(.GET, Self.prefix + "forward-auth", headers: [("X-Forwarded-Method", "GET")]))
        #expect(response.status == 400)
        #expect(response.json?["detail"]?.stringValue?.contains("X-Forwarded-Uri") == true)
        // nginx passes on 401 and 403 only (any other status is its own 500): the same refusal
        // on `auth-request` is a 403 carrying the real status (docs/authorizer.md).
        let nginx = try await gateway.send(
            TestRequest(.GET, Self.prefix + "auth-request", headers: [("X-Original-Method", "GET")]))
        #expect(nginx.status == 403)
        #expect(nginx.header("X-Auth-Gateway-Status") == "400")
        #expect(nginx.json?["detail"]?.stringValue?.contains("X-Original-URI") == true)
        let unknown = try await gateway.send(TestRequest(.GET, Self.prefix + "nope"))
        #expect(unknown.status == 404)
    }

    /// Hostile calls get a clear refusal and the gateway keeps answering: an oversized header
    /// set (431, the listener's limit), forged contract headers that are not values (400).
    @Test func hostileCallsAreRefusedAndTheGatewayKeepsServing() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        var huge = Self.nginx("GET", "/api/x", token: TestKeys.token())
        huge.headers.append(("X-Padding", String(repeating: "a", count: 40_000)))
        #expect(try await gateway.send(huge).status == 431)
        var forged = Self.forwardAuth("GET", "/api/x", token: TestKeys.token())
        forged.headers.append(("X-Forwarded-Host", "user@evil.example"))
        forged.headers.removeAll { $0.0 == "X-Forwarded-Host" && $0.1 == "shop.example.com" }
        #expect(try await gateway.send(forged).status == 400)
        #expect(try await gateway.send(Self.nginx("GET", "/api/x", token: TestKeys.token())).status == 200)
    }

    /// Traefik's and Caddy's `forward-auth` and Envoy's HTTP `ext-authz` make the original
    /// request canonical as a proxied one is (docs/forwarding.md, "Request targets"): an
    /// ambiguous spelling is 400 with its problem type, whatever the token, never an allow; a
    /// spelling that is only another way to write a path is decided on the path it names.
    @Test func ambiguousOriginalsAre400AndOtherSpellingsAreDecidedOnTheirCanonicalPath() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        let ambiguous = [
            "/public/..%2Fadmin/x", "/public/..%5cadmin/x", "/public/..;/admin/x", "/public/%252e%252e/admin/x",
            "/public/%C0%AE%C0%AE/admin/x", "/public/..\\admin/x",
        ]
        for uri in ambiguous {
            for caller in [token, nil] {
                let forward = try await gateway.send(Self.forwardAuth("GET", uri, token: caller))
                #expect(forward.status == 400, "forward-auth \(uri): \(forward.status) \(forward.text)")
                #expect(forward.json?["type"]?.stringValue == "urn:auth-gateway:problem:request.ambiguous_path")
                // Byte for byte: the test client refuses to send a raw `\` itself.
                let envoy = try await RawExchange.send(
                    port: gateway.port,
                    RawExchange.get(
                        Array((Self.prefix + "ext-authz" + uri).utf8), host: Array("shop.example.com".utf8),
                        headers: caller.map { [("Authorization", "Bearer \($0)")] } ?? []))
                #expect(envoy.status == 400, "ext-authz \(uri): \(envoy.status) \(envoy.text)")
                #expect(envoy.problem == "request.ambiguous_path", "ext-authz \(uri)")
            }
        }
        for host in ["user@shop.example.com", "shop.example.com:80:80", "shop example.com"] {
            var forged = Self.forwardAuth("GET", "/public/x", token: token)
            forged.headers.removeAll { $0.0 == "X-Forwarded-Host" }
            forged.headers.append(("X-Forwarded-Host", host))
            let response = try await gateway.send(forged)
            #expect(response.status == 400, "\(host): \(response.status)")
            #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:request.ambiguous_host", "\(host)")
        }
        // `%2e%2e` is `..`: the original names /admin/x, so no token is 401, not /public/'s allow.
        for uri in ["/public/%2e%2e/admin/x", "/public/./../admin/x", "/public//../admin/x"] {
            #expect(try await gateway.send(Self.forwardAuth("GET", uri)).status == 401, "\(uri)")
            let envoy = try await gateway.send(
                TestRequest(.GET, Self.prefix + "ext-authz" + uri, headers: [("Host", "shop.example.com")]))
            #expect(envoy.status == 401, "ext-authz \(uri): \(envoy.status)")
        }
        // The controls: the same calls, plainly spelled.
        #expect(try await gateway.send(Self.forwardAuth("GET", "/public/x")).status == 200)
        #expect(try await gateway.send(Self.forwardAuth("GET", "/admin/x")).status == 401)
        #expect(gateway.backend.requestCount == 0)
    }

    /// A caller outside `trustedPeers` gets 403 and nothing is decided (not even a route
    /// lookup: the answer is the same for any original request).
    @Test func untrustedPeersAreRefusedUndecided() async throws {
        let gateway = try await Self.start { config in config["authorizer"] = ["trustedPeers": ["10.0.0.0/8"]] }
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(Self.forwardAuth("GET", "/public/x"))
        #expect(response.status == 403)
        #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:authorizer.untrusted_peer")
    }

    /// The auth service down: a refusal (503; 403 with the status beside it for nginx), never
    /// an allow.
    @Test func failsClosedWhenTheAuthServiceIsDown() async throws {
        let refusing = try RefusingPort()
        atTestEnd { refusing.close() }
        let gateway = try await Self.start { config in
            config["authService"] = ["url": .string(refusing.url), "profile": ["path": "/v1/user"]]
            config["identityHeaders"] = ["X-User-Name": "profile.name"]
        }
        atTestEnd { await gateway.stop() }
        let nginx = try await gateway.send(Self.nginx("GET", "/api/x", token: TestKeys.token()))
        #expect(nginx.status == 403)
        #expect(nginx.header("X-Auth-Gateway-Status") == "503")
        let forward = try await gateway.send(Self.forwardAuth("GET", "/api/x", token: TestKeys.token()))
        #expect(forward.status == 503)
        #expect(forward.header("X-User-Name") == nil)
    }

    /// h2c: the same contracts on an HTTP/2 stream; the metrics and the access log label the
    /// decisions `mode="authorizer"`.
    @Test func overH2CAndLabelledInTheMetrics() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        let fields = [
            ("x-forwarded-method", "GET"), ("x-forwarded-uri", "/api/h2"), ("x-forwarded-proto", "https"),
            ("authorization", "Bearer \(TestKeys.token())"),
        ]
        let response = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(path: Self.prefix + "forward-auth", fields: fields), endStream: true))
        ])
        #expect(response.status == 200)
        #expect(response.headers?.first(name: "x-user-subject") == "user-42")

        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains(#"route="api",status_class="2xx",protocol="h2",mode="authorizer"} 1"#))
    }

    /// CORS in authorizer mode (docs/policies.md, "CORS"): a granted preflight is allowed without
    /// a token, its `Access-Control-*` fields on the allow answer; a refused one is a denial;
    /// a refusal to an allowed origin carries the CORS fields.
    @Test func corsPreflightsAreAllowedWithoutATokenAndRefusalsCarryTheCORSFields() async throws {
        let gateway = try await Self.start { config in
            config["routes"] = [
                [
                    "name": "api", "pathPrefix": "/", "backend": "api",
                    "cors": ["allowOrigins": ["https://app.example.com"], "allowMethods": ["GET", "PUT"]],
                ]
            ]
            config["rateLimits"] = nil
        }
        atTestEnd { await gateway.stop() }
        for origin in ["https://app.example.com", "https://evil.example"] {
            for contract in ["nginx", "forward-auth"] {
                var request =
                    contract == "nginx" ? Self.nginx("OPTIONS", "/orders/7") : Self.forwardAuth("OPTIONS", "/orders/7")
                request.headers += [("Origin", origin), ("Access-Control-Request-Method", "PUT")]
                let answer = try await gateway.send(request)
                if origin == "https://app.example.com" {
                    #expect(answer.status == 200, "\(contract)")
                    #expect(answer.header("Access-Control-Allow-Origin") == origin, "\(contract)")
                    #expect(answer.header("Access-Control-Allow-Methods") == "GET, PUT", "\(contract)")
                } else {
                    #expect(answer.status == 403, "\(contract)")
                    #expect(answer.header("Access-Control-Allow-Origin") == nil, "\(contract)")
                }
            }
        }
        var refused = Self.forwardAuth("GET", "/orders/7")
        refused.headers.append(("Origin", "https://app.example.com"))
        let answer = try await gateway.send(refused)
        #expect(answer.status == 401)
        #expect(answer.header("Access-Control-Allow-Origin") == "https://app.example.com")
        #expect(gateway.backend.requestCount == 0)
    }
}
