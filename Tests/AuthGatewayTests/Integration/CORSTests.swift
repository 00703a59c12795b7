import Foundation
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// CORS over real sockets (docs/policies.md, "CORS"): preflights answered before
/// authentication and never forwarded, the CORS fields on the backend's answers and on the
/// gateway's own refusals for allowed origins only, over HTTP/1.1 and (with curl) HTTP/2.
@Suite("CORS (real sockets)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct CORSTests {
    static let app = "https://app.example.com"

    private func start() async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["routes"] = [
                [
                    "name": "orders", "pathPrefix": "/orders/", "backend": "api", "methods": ["GET", "PUT", "OPTIONS"],
                    "cors": [
                        "allowOrigins": [.string(Self.app)], "allowMethods": ["GET", "PUT"],
                        "allowHeaders": ["Authorization", "Content-Type"], "exposeHeaders": ["X-Request-Id"],
                        "allowCredentials": true, "maxAgeSeconds": 600,
                    ],
                ],
                ["name": "plain", "pathPrefix": "/", "backend": "api"],
            ]
        }
    }

    private func preflight(
        _ gateway: GatewayFixture, origin: String = Self.app, method: String = "PUT",
        headers requested: String? = "authorization, content-type", path: String = "/orders/7"
    ) async throws -> TestResponse {
        var headers = [("Origin", origin), ("Access-Control-Request-Method", method)]
        if let requested { headers.append(("Access-Control-Request-Headers", requested)) }
        return try await gateway.send(TestRequest(.OPTIONS, path, headers: headers))
    }

    @Test("a preflight is granted before authentication and never forwarded")
    func grantedPreflight() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let response = try await self.preflight(gateway)
        #expect(response.status == 204)
        #expect(response.header("access-control-allow-origin") == Self.app)
        #expect(response.header("access-control-allow-methods") == "GET, PUT")
        #expect(response.header("access-control-allow-headers") == "authorization, content-type")
        #expect(response.header("access-control-allow-credentials") == "true")
        #expect(response.header("access-control-max-age") == "600")
        #expect(response.header("vary")?.contains("Origin") == true)
        #expect(response.header("content-length") == nil)
        #expect(response.bodyBytes == 0)
        #expect(gateway.backend.requestCount == 0)
    }

    @Test("a preflight from another origin, for another method or header is refused without CORS fields")
    func refusedPreflights() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let cases: [(origin: String, method: String, headers: String?, detail: String)] = [
            ("https://evil.example", "PUT", nil, "the origin is not allowed"),
            (Self.app, "DELETE", nil, "the method DELETE is not allowed"),
            (Self.app, "GET", "x-secret-header", "the header x-secret-header is not allowed"),
        ]
        for (origin, method, headers, detail) in cases {
            // DELETE is not among the route's `methods` (the preflight's OPTIONS is): refused too.
            let response = try await self.preflight(gateway, origin: origin, method: method, headers: headers)
            #expect(response.status == 403, "\(detail)")
            #expect(response.header("content-type") == "application/problem+json")
            let problem = try #require(response.json)
            #expect(problem["type"]?.stringValue == "urn:auth-gateway:problem:cors.refused")
            #expect(problem["detail"]?.stringValue == "The cross-origin request is not allowed: \(detail)")
            #expect(response.header("access-control-allow-origin") == nil, "\(detail)")
        }
        #expect(gateway.backend.requestCount == 0)
    }

    @Test("a route's methods apply to the preflight's requested method; a method outside allowMethods is refused")
    func methodNotAllowed() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["routes"] = [
                [
                    "name": "orders", "pathPrefix": "/", "backend": "api",
                    "cors": ["allowOrigins": [.string(Self.app)], "allowMethods": ["GET"]],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        let response = try await self.preflight(gateway, method: "DELETE", headers: nil)
        #expect(response.status == 403)
        #expect(
            try #require(response.json)["detail"]?.stringValue?.hasSuffix("the method DELETE is not allowed") == true)
        #expect(response.header("access-control-allow-origin") == nil)
    }

    @Test("answers to an allowed origin carry the gateway's CORS fields, the backend's are replaced")
    func actualRequests() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "cors-user")
        let allowed = try await gateway.send(
            TestRequest(
                .GET, "/orders/7?backend-cors=1",
                headers: [("Origin", Self.app), ("Authorization", "Bearer \(token)")]))
        #expect(allowed.status == 200)
        #expect(allowed.header("x-echo-backend") == "1")
        #expect(allowed.headers["access-control-allow-origin"] == [Self.app])
        #expect(allowed.headers["access-control-allow-credentials"] == ["true"])
        #expect(allowed.headers["access-control-expose-headers"] == ["X-Request-Id"])
        #expect(allowed.headers["vary"].contains("Origin"))

        // The gateway's own 401: readable by the page.
        let refused = try await gateway.send(TestRequest(.GET, "/orders/7", headers: [("Origin", Self.app)]))
        #expect(refused.status == 401)
        #expect(refused.header("access-control-allow-origin") == Self.app)
        #expect(refused.header("access-control-allow-credentials") == "true")

        // Another origin: none of the CORS fields, neither the gateway's nor the backend's.
        for (path, status) in [("/orders/7?backend-cors=1", 200), ("/orders/8", 401)] {
            var headers = [("Origin", "https://evil.example")]
            if status == 200 { headers.append(("Authorization", "Bearer \(token)")) }
            let other = try await gateway.send(TestRequest(.GET, path, headers: headers))
            #expect(other.status == status)
            #expect(other.header("access-control-allow-origin") == nil, "\(path)")
            #expect(other.header("access-control-allow-credentials") == nil, "\(path)")
            #expect(other.header("access-control-expose-headers") == nil, "\(path)")
        }

        // A route without `cors` passes the backend's fields through untouched, and an OPTIONS
        // preflight there is an ordinary request (authenticated, forwarded).
        let plain = try await gateway.send(
            TestRequest(
                .GET, "/plain?backend-cors=1", headers: [("Origin", Self.app), ("Authorization", "Bearer \(token)")]))
        #expect(plain.header("access-control-allow-origin") == "*")
        let plainPreflight = try await self.preflight(gateway, path: "/plain")
        #expect(plainPreflight.status == 401)
    }

    @Test("over HTTP/2 (curl): a granted preflight and the CORS fields on a refusal")
    func http2() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let url = "http://127.0.0.1:\(gateway.port)/orders/7"
        let preflight = HTTP2ClientTests.parse(
            try await HTTP2ClientTests.curl([
                "--http2-prior-knowledge", "--include", "-X", "OPTIONS", "-H", "Origin: \(Self.app)", "-H",
                "Access-Control-Request-Method: PUT", url,
            ]).stdout)
        #expect(preflight.version == "HTTP/2")
        #expect(preflight.status == 204)
        #expect(preflight.headers["access-control-allow-origin"] == [Self.app])
        #expect(preflight.headers["content-length"] == nil)
        let refused = HTTP2ClientTests.parse(
            try await HTTP2ClientTests.curl(["--http2-prior-knowledge", "--include", "-H", "Origin: \(Self.app)", url])
                .stdout)
        #expect(refused.status == 401)
        #expect(refused.headers["access-control-allow-origin"] == [Self.app])
        #expect(refused.headers["vary"] == ["Origin"])
        #expect(gateway.backend.requestCount == 0)
    }
}
