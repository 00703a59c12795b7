import Foundation
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Policies over real sockets (docs/policies.md): a refusal's problem document names the
/// failing clause by its JSON path and carries no claim value; what a policy allows reaches the
/// backend.
@Suite("Policies (real sockets)", .awaitsCleanups)
struct PolicyTests {
    static let policy: JSONValue = [
        "anyOf": [["claims.groups": "admins"], ["claims.realm_access.roles": ["in": ["orders-admin", "ops"]]]],
        "not": ["claims.groups": "suspended"],
        "allOf": [["client.ip": ["cidr": ["127.0.0.0/8", "::1/128"]]], ["request.method": ["in": ["GET", "HEAD"]]]],
        "request.header.x-tenant": ["exists": true],
    ]

    private func start() async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["routes"] = [
                ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "none"],
                ["name": "orders", "pathPrefix": "/", "backend": "api", "require": Self.policy],
            ]
        }
    }

    private func send(
        _ gateway: GatewayFixture, _ claims: JSONObject, method: HTTPMethod = .GET, tenant: Bool = true
    ) async throws -> TestResponse {
        var headers = [("Authorization", "Bearer " + TestKeys.token(extra: claims))]
        if tenant { headers.append(("X-Tenant", "acme")) }
        return try await gateway.send(TestRequest(method, "/orders/7", headers: headers))
    }

    @Test("a request the policy allows is forwarded")
    func allowed() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        #expect(try await self.send(gateway, ["groups": ["admins"]]).status == 200)
        #expect(try await self.send(gateway, ["realm_access": ["roles": ["ops"]]]).status == 200)
        #expect(gateway.backend.requestCount == 2)
    }

    @Test("a 403 names the failing clause's path, never a claim's value")
    func refusalsNameThePath() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let secret = "secret-team-7f3a"
        let cases: [(claims: JSONObject, method: HTTPMethod, tenant: Bool, path: String)] = [
            (
                ["groups": [.string(secret)], "realm_access": ["roles": [.string(secret)]]], .GET, true,
                "routes[1].require.anyOf"
            ),
            (["groups": ["admins", "suspended", .string(secret)]], .GET, true, "routes[1].require.not"),
            (["groups": ["admins", .string(secret)]], .POST, true, #"routes[1].require.allOf[1]["request.method"]"#),
            (["groups": ["admins", .string(secret)]], .GET, false, #"routes[1].require["request.header.x-tenant"]"#),
        ]
        for (claims, method, tenant, path) in cases {
            let response = try await self.send(gateway, claims, method: method, tenant: tenant)
            #expect(response.status == 403, "\(path)")
            #expect(response.header("content-type") == "application/problem+json")
            let problem = try #require(response.json)
            #expect(problem["type"]?.stringValue == "urn:auth-gateway:problem:access.forbidden")
            #expect(problem["detail"]?.stringValue == "The request does not satisfy the route requirement \(path)")
            #expect(!response.text.contains(secret))
            let challenge = try #require(response.header("www-authenticate"))
            #expect(challenge.contains("error=\"insufficient_scope\""))
            #expect(!challenge.contains(secret))
        }
        #expect(gateway.backend.requestCount == 0)
    }

    /// The policy of the benchmark (`Benchmarks/`, "require: 10-clause policy"), through the
    /// whole embedded pipeline: it lets the request through; one clause changed refuses it.
    @Test("the benchmark's 10-clause policy passes a whole request; changing one clause refuses it")
    func benchmarkPolicy() throws {
        let policy = #"""
            {"claims.sub":"bench-user-42","claims.groups":{"in":["admins","ops"]},"claims.scope":"write:items",
             "claims.realm_access.roles":"orders-admin","claims.email":{"suffix":"@bench.local"},
             "claims.email_verified":true,"not":{"claims.groups":"suspended"},
             "anyOf":[{"request.method":"POST"},{"request.method":{"in":["GET","HEAD"]}}],
             "client.ip":{"cidr":["10.0.0.0/8","127.0.0.0/8"]},"claims.act":{"exists":false}}
            """#
        let token = TestKeys.token(
            subject: "bench-user-42",
            extra: [
                "scope": "read:items write:items", "groups": ["ops", "staff"],
                "realm_access": ["roles": ["orders-admin"]],
                "email": "bench@bench.local", "email_verified": true,
            ])
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:18090\r\nAuthorization: Bearer \(token)\r\n\r\n"
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"
        for (require, status) in [
            (policy, 200), (policy.replacingOccurrences(of: "127.0.0.0/8", with: "192.0.2.0/24"), 403),
        ] {
            let configuration = """
                {"listener":{"host":"127.0.0.1","port":0},"eventLoopThreads":1,
                 "tokens":{"issuers":[{"issuer":"\(TestKeys.issuer)","audiences":["\(TestKeys.audience)"],"leewaySeconds":0,
                   "keys":[{"kid":"test-rs","algorithm":"RS256","publicKeyPEM":\(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]}]},
                 "backends":{"api":{"urls":["http://10.0.0.1:8001"]}},
                 "routes":[{"name":"all","pathPrefix":"/","backend":"api","require":\(require)}],
                 "logging":{"accessLog":false}}
                """
            let whole = try GatewayBenchmarkSupport.WholeRequest(
                configuration: configuration, request: request, response: response, now: Date().timeIntervalSince1970)
            #expect(try whole.status() == status)
        }
    }
    /// `request.host` and `request.path` read the canonical target (docs/forwarding.md): a
    /// policy on the host cannot be passed by another spelling of it, and `request.header.host`
    /// is the canonical host too.
    @Test("request.host and request.path are canonical")
    func canonicalRequestFields() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["routes"] = [
                [
                    "name": "tenant", "pathPrefix": "/", "backend": "api",
                    "require": [
                        "not": [
                            "anyOf": [
                                ["request.host": "Admin.Example.com."], ["request.header.host": "admin.example.com"],
                            ]
                        ],
                        "request.path": ["prefix": "/api/"],
                    ],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        let token = "Bearer " + TestKeys.token()
        for host in ["admin.example.com", "ADMIN.example.com.", "admin.example.com.:80"] {
            let refused = try await gateway.send(
                TestRequest(.GET, "/api/x", headers: [("Host", host), ("Authorization", token)]))
            #expect(refused.status == 403, "\(host)")
        }
        let other = try await gateway.send(
            TestRequest(.GET, "/x/../api//y", headers: [("Host", "shop.example.com"), ("Authorization", token)]))
        #expect(other.status == 200)
        #expect(other.json?["uri"]?.stringValue == "/api/y")
        let outside = try await gateway.send(
            TestRequest(.GET, "/api/../x", headers: [("Host", "shop.example.com"), ("Authorization", token)]))
        #expect(outside.status == 403)
        #expect(gateway.backend.requestCount == 1)
    }
}
