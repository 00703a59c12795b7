import Foundation
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Attacks on CORS (docs/policies.md, "CORS"), over real sockets: the opaque origin `null`,
/// `*` with credentials, `allowHeaders: ["*"]` with credentials, and `Vary` on every preflight
/// answer and on actual answers, so that no cache hands one origin's answer to another.
@Suite("CORS attacks (real sockets)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct CORSAttackTests {
    static let app = "https://app.example.com"
    static let preflightVary = ["Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers"]

    private func start() async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["routes"] = [
                [
                    "name": "orders", "pathPrefix": "/orders/", "backend": "api", "methods": ["GET", "PUT", "OPTIONS"],
                    "cors": [
                        "allowOrigins": [.string(Self.app)], "allowMethods": ["GET", "PUT"],
                        "allowHeaders": ["Authorization", "Content-Type"], "allowCredentials": true,
                    ],
                ],
                [
                    "name": "anyone", "pathPrefix": "/public/", "backend": "api", "auth": "none",
                    "cors": ["allowOrigins": ["*"], "allowHeaders": ["*"]],
                ],
                [
                    "name": "headers", "pathPrefix": "/any-header/", "backend": "api",
                    "cors": [
                        "allowOrigins": [.string(Self.app)], "allowHeaders": ["*"], "allowCredentials": true,
                        "allowMethods": ["GET", "POST"],
                    ],
                ],
                ["name": "plain", "pathPrefix": "/", "backend": "api"],
            ]
        }
    }

    private func preflight(
        _ gateway: GatewayFixture, path: String, origin: String = Self.app, method: String = "PUT",
        headers requested: String? = nil
    ) async throws -> TestResponse {
        var headers = [("Origin", origin), ("Access-Control-Request-Method", method)]
        if let requested { headers.append(("Access-Control-Request-Headers", requested)) }
        return try await gateway.send(TestRequest(.OPTIONS, path, headers: headers))
    }

    /// The field names `Vary` lists, across its lines.
    static func vary(_ response: TestResponse) -> [String] {
        response.headers["vary"].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
    }

    @Test("Origin: null is never allowed: not by a list, not by *; no CORS fields on its answers")
    func nullOrigin() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        for path in ["/orders/1", "/public/1"] {
            let refused = try await self.preflight(gateway, path: path, origin: "null", method: "GET")
            #expect(refused.status == 403, "\(path)")
            #expect(refused.header("access-control-allow-origin") == nil, "\(path)")
            #expect(refused.json?["detail"]?.stringValue?.contains("the origin is not allowed") == true, "\(path)")
        }
        let actual = try await gateway.send(TestRequest(.GET, "/public/x", headers: [("Origin", "null")]))
        #expect(actual.status == 200)
        #expect(actual.header("access-control-allow-origin") == nil)
        #expect(Self.vary(actual).contains("Origin"))
        let withToken = try await gateway.send(
            TestRequest(
                .GET, "/orders/x", headers: [("Origin", "null"), ("Authorization", "Bearer \(TestKeys.token())")]))
        #expect(withToken.status == 200)
        #expect(withToken.header("access-control-allow-origin") == nil)
        #expect(withToken.header("access-control-allow-credentials") == nil)
        // Another origin on the * route still gets its own origin back, never "*".
        let other = try await gateway.send(TestRequest(.GET, "/public/x", headers: [("Origin", "https://x.example")]))
        #expect(other.header("access-control-allow-origin") == "https://x.example")
    }

    @Test("credentials never go with *: the answer names the origin, on granted preflights and on answers")
    func neverStarWithCredentials() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let granted = try await self.preflight(gateway, path: "/orders/1", headers: "authorization")
        #expect(granted.status == 204)
        #expect(granted.header("access-control-allow-origin") == Self.app)
        #expect(granted.header("access-control-allow-credentials") == "true")
        let token = TestKeys.token()
        for (path, headers) in [
            ("/orders/1", [("Authorization", "Bearer \(token)")]), ("/orders/1", []), ("/any-header/1", []),
        ] {
            let answer = try await gateway.send(TestRequest(.GET, path, headers: headers + [("Origin", Self.app)]))
            #expect(answer.header("access-control-allow-origin") == Self.app, "\(path) \(answer.status)")
            #expect(answer.header("access-control-allow-credentials") == "true", "\(path)")
            for value in answer.headers.map({ $0.value }) { #expect(value != "*", "\(path): a field is *") }
        }
    }

    @Test("allowHeaders * with credentials: the preflight names each requested header, never *")
    func starHeadersWithCredentials() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let granted = try await self.preflight(
            gateway, path: "/any-header/1", method: "POST", headers: "authorization, x-trace-id,content-type")
        #expect(granted.status == 204)
        #expect(granted.header("access-control-allow-headers") == "authorization, x-trace-id, content-type")
        #expect(granted.header("access-control-allow-credentials") == "true")
        // Without credentials the names are echoed as well (a browser does not extend * to Authorization).
        let public_ = try await self.preflight(
            gateway, path: "/public/1", origin: "https://x.example", method: "GET", headers: "authorization, x-a")
        #expect(public_.status == 204)
        #expect(public_.header("access-control-allow-headers") == "authorization, x-a")
        #expect(public_.header("access-control-allow-credentials") == nil)
    }

    @Test("Vary names Origin and both request fields on granted and refused preflights; Origin on answers")
    func varyEverywhere() async throws {
        let gateway = try await self.start()
        atTestEnd { await gateway.stop() }
        let preflights: [(String, TestResponse)] = [
            ("granted", try await self.preflight(gateway, path: "/orders/1", headers: "content-type")),
            ("granted without headers", try await self.preflight(gateway, path: "/orders/1")),
            ("origin refused", try await self.preflight(gateway, path: "/orders/1", origin: "https://evil.example")),
            ("method refused", try await self.preflight(gateway, path: "/any-header/1", method: "PUT")),
            ("method outside the route", try await self.preflight(gateway, path: "/orders/1", method: "DELETE")),
            ("header refused", try await self.preflight(gateway, path: "/orders/1", headers: "x-secret")),
            ("null refused", try await self.preflight(gateway, path: "/orders/1", origin: "null")),
        ]
        for (name, response) in preflights {
            #expect(Self.vary(response) == Self.preflightVary, "\(name) (\(response.status)): \(Self.vary(response))")
        }
        #expect(preflights.map(\.1.status) == [204, 204, 403, 403, 403, 403, 403])
        let token = TestKeys.token()
        let actuals: [(String, TestResponse)] = [
            (
                "allowed origin",
                try await gateway.send(
                    TestRequest(
                        .GET, "/orders/1", headers: [("Origin", Self.app), ("Authorization", "Bearer \(token)")]))
            ),
            (
                "401 to an allowed origin",
                try await gateway.send(TestRequest(.GET, "/orders/1", headers: [("Origin", Self.app)]))
            ),
            (
                "another origin",
                try await gateway.send(
                    TestRequest(
                        .GET, "/orders/1",
                        headers: [("Origin", "https://evil.example"), ("Authorization", "Bearer \(token)")]))
            ),
            (
                "no origin",
                try await gateway.send(TestRequest(.GET, "/orders/1", headers: [("Authorization", "Bearer \(token)")]))
            ),
        ]
        for (name, response) in actuals {
            #expect(Self.vary(response).filter { $0 == "Origin" }.count == 1, "\(name): \(Self.vary(response))")
        }
        #expect(actuals.map(\.1.status) == [200, 401, 200, 200])
        #expect(gateway.backend.requestCount == 3, "no preflight was forwarded")
    }
}
