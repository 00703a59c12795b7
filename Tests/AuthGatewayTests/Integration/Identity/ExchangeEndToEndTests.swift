import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Token exchange through a running gateway (docs/token-exchange.md), with idpyoidc's RFC 8693
/// token endpoint (`Fixtures/exchange/exchange_server.py`) as the provider: it issues the
/// caller's token (verified by the gateway against its JWKS) and exchanges it. The backend
/// gets the exchanged token in `Authorization` and never the caller's, over HTTP/1.1 and
/// HTTP/2; a refusal is 403, a dead or hanging endpoint 503, and nothing is forwarded then.
enum ExchangeEndToEnd {
    /// idpyoidc as an issuer the gateway verifies the caller's token against.
    static func issuer(_ server: ExchangeServer) -> JSONValue {
        [
            "issuer": .string("http://127.0.0.1:\(server.port)"),
            "jwksURL": .string("http://127.0.0.1:\(server.port)/jwks.json"), "leewaySeconds": 0,
        ]
    }

    /// A route's `exchange` at `server` (the live endpoint unless `endpointPort` says otherwise).
    static func exchange(
        _ server: ExchangeServer, endpointPort: Int? = nil, audience: String = "orders-api",
        timeoutMilliseconds: Int = 60_000
    ) -> JSONValue {
        [
            "tokenEndpoint": .string("http://127.0.0.1:\(endpointPort ?? server.port)/token"), "clientId": "gateway",
            "clientSecret": "gateway-secret", "audience": [.string(audience)], "scope": "orders.read",
            "timeoutMilliseconds": .number(JSONNumber(timeoutMilliseconds)),
        ]
    }

    /// Routes: `/orders/` exchanged for `orders-api`, `/refused/` for an audience idpyoidc
    /// refuses (`invalid_grant`), `/hang/` at `hangingPort` (300 ms), the rest not exchanged.
    static func configure(_ config: inout JSONObject, _ server: ExchangeServer, hangingPort: Int? = nil) {
        config.set("tokens.issuers", [Self.issuer(server)])
        var routes: [JSONValue] = [
            ["name": "orders", "pathPrefix": "/orders/", "backend": "api", "exchange": Self.exchange(server)],
            [
                "name": "refused", "pathPrefix": "/refused/", "backend": "api",
                "exchange": Self.exchange(server, audience: "refused-api"),
            ],
        ]
        if let hangingPort {
            routes.append([
                "name": "hang", "pathPrefix": "/hang/", "backend": "api",
                "exchange": Self.exchange(server, endpointPort: hangingPort, timeoutMilliseconds: 300),
            ])
        }
        routes.append(["name": "plain", "pathPrefix": "/", "backend": "api"])
        config["routes"] = .array(routes)
    }

    /// `auth_gateway_exchanges_total{route,outcome}` for `route` and `outcome` on `gateway`'s
    /// admin listener (0 when the series is absent).
    static func exchangesCounted(_ gateway: GatewayFixture, route: String, outcome: String) async throws -> Int {
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("auth_gateway_exchanges_total{") && $0.contains("route=\"\(route)\"")
                && $0.contains("outcome=\"\(outcome)\"")
        }
        return line.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0
    }

    /// The exchanged token the backend got, checked: exactly one `Authorization`, `Bearer`,
    /// not the caller's, and the caller's token nowhere in what the backend received.
    static func exchanged(_ response: TestResponse, caller: String) throws -> String {
        try #require(response.status == 200, "\(response.status) \(response.text)")
        let values = response.echoedHeader("authorization")
        try #require(values.count == 1, "\(values)")
        try #require(values[0].hasPrefix("Bearer "))
        let token = String(values[0].dropFirst("Bearer ".count))
        #expect(token != caller)
        #expect(!response.text.contains(caller), "the caller's token reached the backend")
        return token
    }
}

@Suite("Token exchange end to end (idpyoidc, real sockets)", .serialized, .awaitsCleanups, .timeLimit(.minutes(3)))
struct ExchangeEndToEndTests {
    @Test("the backend gets the exchanged token, never the caller's, over HTTP/1.1 and HTTP/2; one call for both")
    func exchanged() async throws {
        let server = try await ExchangeServer.start()
        atTestEnd { await server.tool.stop() }
        let gateway = try await GatewayFixture.start { ExchangeEndToEnd.configure(&$0, server) }
        atTestEnd { await gateway.stop() }
        let caller = try await server.mint()

        let first = try await gateway.send(.get("/orders/1", token: caller.token))
        let exchanged = try ExchangeEndToEnd.exchanged(first, caller: caller.token)
        #expect(try IdentityPeers.decode(exchanged).claims["aud"] == ["orders-api"], "made for the backend")
        #expect(try await server.calls() == 1)

        // HTTP/2: the same caller, answered from the cache.
        let h2 = HTTP2ClientTests.parse(
            try await HTTP2ClientTests.curl([
                "--http2-prior-knowledge", "--include", "-H", "Authorization: Bearer \(caller.token)",
                "http://127.0.0.1:\(gateway.port)/orders/2",
            ]).stdout)
        #expect(h2.version == "HTTP/2")
        #expect(h2.status == 200, "\(h2.body)")
        let echoed = try #require(try JSONValue(parsing: h2.body)["headers"])
        #expect(echoed["authorization"] == [.string("Bearer \(exchanged)")])
        #expect(!h2.body.contains(caller.token))
        #expect(try await server.calls() == 1, "the second request used the cached exchange")
        #expect(try await ExchangeEndToEnd.exchangesCounted(gateway, route: "orders", outcome: "exchanged") == 1)
        #expect(try await ExchangeEndToEnd.exchangesCounted(gateway, route: "orders", outcome: "cached") == 1)

        // A route without exchange forwards the caller's own token (the control).
        let plain = try await gateway.send(.get("/plain/1", token: caller.token))
        #expect(plain.echoedHeader("authorization") == ["Bearer \(caller.token)"])
        #expect(try await server.calls() == 1)
    }

    @Test("invalid_grant from the token endpoint: 403 exchange.refused, nothing forwarded")
    func refused() async throws {
        let server = try await ExchangeServer.start()
        atTestEnd { await server.tool.stop() }
        let gateway = try await GatewayFixture.start { ExchangeEndToEnd.configure(&$0, server) }
        atTestEnd { await gateway.stop() }
        let caller = try await server.mint()
        let response = try await gateway.send(.get("/refused/1", token: caller.token))
        #expect(response.status == 403, "\(response.text)")
        #expect(response.json?["type"]?.stringValue?.hasSuffix("exchange.refused") == true, "\(response.text)")
        #expect(response.json?["detail"]?.stringValue?.contains("invalid_grant") == true)
        #expect(!response.text.contains("audience not allowed"), "the provider's description is not passed on")
        #expect(try await server.calls() == 1)
        #expect(gateway.backend.requestCount == 0)
        #expect(try await ExchangeEndToEnd.exchangesCounted(gateway, route: "refused", outcome: "refused") == 1)
        #expect(try await ExchangeEndToEnd.exchangesCounted(gateway, route: "refused", outcome: "exchanged") == 0)
    }

    @Test("a killed token endpoint, and one that never answers: 503 exchange.unavailable with Retry-After")
    func unavailable() async throws {
        let server = try await ExchangeServer.start()
        // Stopped below on purpose; this stops it if the test fails first (a second stop is a no-op).
        atTestEnd { await server.tool.stop() }
        let blackhole = try await ExchangeServer.start(blackhole: true)
        atTestEnd { await blackhole.tool.stop() }
        let gateway = try await GatewayFixture.start {
            ExchangeEndToEnd.configure(&$0, server, hangingPort: blackhole.port)
        }
        atTestEnd { await gateway.stop() }
        let caller = try await server.mint()

        let started = ContinuousClock.now
        let hanging = try await gateway.send(.get("/hang/1", token: caller.token))
        #expect(hanging.status == 503, "\(hanging.text)")
        #expect(hanging.json?["type"]?.stringValue?.hasSuffix("exchange.unavailable") == true, "\(hanging.text)")
        #expect(hanging.header("Retry-After") != nil)
        #expect(ContinuousClock.now - started < .seconds(30), "bounded by the route's 300 ms, not the client's")

        await server.tool.stop()
        let killed = try await gateway.send(.get("/orders/1", token: caller.token))
        #expect(killed.status == 503, "\(killed.text)")
        #expect(killed.json?["type"]?.stringValue?.hasSuffix("exchange.unavailable") == true, "\(killed.text)")
        #expect(killed.header("Retry-After") != nil)
        #expect(gateway.backend.requestCount == 0)
    }
}

extension PostgreSQLTests {
    @Suite("Token exchange through three gateways on one PostgreSQL", .awaitsCleanups, .timeLimit(.minutes(3)))
    struct ExchangeFleetEndToEndTests {
        @Test("200 concurrent requests over three gateways make one exchange; every backend request gets its token")
        func oneExchangeForTheFleet() async throws {
            let server = try await ExchangeServer.start()
            atTestEnd { await server.tool.stop() }
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let environment = cluster.environment.merging(["STATE_KEY": SharedStateTesting.keyBase64]) { $1 }
            var gateways: [GatewayFixture] = []
            for _ in 0..<3 {
                let gateway = try await GatewayFixture.start(environment: environment) { config in
                    ExchangeEndToEnd.configure(&config, server)
                    config["sharedState"] = [
                        "postgres": ["url": .string(cluster.gatewayURL(database: database)), "tls": "require"],
                        "encryptionKeyBase64": "${STATE_KEY}",
                    ]
                }
                atTestEnd { await gateway.stop() }
                gateways.append(gateway)
            }
            // Each instance on the database before the requests: without it, each would exchange alone.
            for gateway in gateways {
                try await SharedStateTesting.eventually("the shared state is in use") {
                    let health = try await TestConnection.connect(port: gateway.adminPort).send(.get("/healthz")).json
                    return health?["checks"]?["sharedState"]?["status"] == "ok"
                }
            }
            let caller = try await server.mint()
            let responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for index in 0..<200 {
                    let gateway = gateways[index % 3]
                    group.addTask { try await gateway.send(.get("/orders/\(index)", token: caller.token)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let tokens = try responses.map { try ExchangeEndToEnd.exchanged($0, caller: caller.token) }
            #expect(Set(tokens).count == 1)
            #expect(try await server.calls() == 1)
            #expect(gateways.map(\.backend.requestCount).reduce(0, +) == 200)
        }
    }
}
