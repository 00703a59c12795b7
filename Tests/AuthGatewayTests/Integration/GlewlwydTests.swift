import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `tokens.introspection.forJWTs` against a real provider: Glewlwyd 2.7 (the Debian package),
/// started by the test (`GlewlwydServer`). Its access tokens are RS256 JWTs; its OIDC plugin
/// introspects (RFC 7662) and revokes (RFC 7009) them. The gateway verifies the JWT with the
/// keys of Glewlwyd's JWKS endpoint and asks Glewlwyd's introspection endpoint about it, with
/// HTTP Basic client authentication.
///
/// Fails (never skips) where the package is missing: `.ci/run` installs it.
@Suite("Introspection against Glewlwyd (a real provider)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct GlewlwydTests {
    static let cacheSeconds = 30

    static func gateway(_ glewlwyd: GlewlwydServer, clock: TestClock, forJWTs: Bool) async throws -> GatewayFixture {
        try await GatewayFixture.start(clock: clock, environment: ["GLEWLWYD_SECRET": glewlwyd.clientSecret]) {
            config in
            config["identityHeaders"] = [
                "X-User-Subject": "claims.sub", "X-User-Scope": "claims.scope", "X-Client": "claims.client_id",
            ]
            config["tokens"] = [
                "issuers": [
                    [
                        "issuer": .string(glewlwyd.issuer), "audiences": [.string(GlewlwydServer.scope)],
                        "jwksURL": .string(glewlwyd.jwksURL),
                        "leewaySeconds": 5,
                    ]
                ],
                "introspection": [
                    "url": .string(glewlwyd.introspectionURL), "clientId": .string(GlewlwydServer.clientID),
                    "clientSecret": "${GLEWLWYD_SECRET}",
                    "clientAuthentication": "basic", "cacheSeconds": .number(JSONNumber(Self.cacheSeconds)),
                    "negativeCacheSeconds": 5,
                    "timeoutMilliseconds": 10000, "issuer": .string(glewlwyd.issuer), "forJWTs": .bool(forJWTs),
                ],
            ]
        }
    }

    /// The JWT's payload, decoded (the test's own reading, not the gateway's).
    static func payload(of token: String) throws -> JSONValue {
        let part = String(token.split(separator: ".")[1])
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try JSONValue(parsing: String(decoding: data, as: UTF8.self))
    }

    static func problemType(_ response: TestResponse) -> String? { response.json?["type"]?.stringValue }

    @Test func aRevokedJWTIsRefusedOnceTheAnswerExpiresAndAMadeUpOpaqueTokenIsRefused() async throws {
        let glewlwyd = try await GlewlwydServer.start()
        atTestEnd { await glewlwyd.stop() }
        if getuid() == 0 {
            #expect(
                glewlwyd.serverUID.map { $0 != 0 } == true,
                "Glewlwyd runs as root (uid \(String(describing: glewlwyd.serverUID)))")
        }
        let token = try await glewlwyd.accessToken()
        let claims = try Self.payload(of: token)
        let subject = try #require(claims["sub"]?.stringValue)
        #expect(claims["iss"]?.stringValue == glewlwyd.issuer)
        #expect(try await glewlwyd.introspect(token)["active"] == .bool(true))

        let clock = TestClock()
        let gateway = try await Self.gateway(glewlwyd, clock: clock, forJWTs: true)
        atTestEnd { await gateway.stop() }
        let active = "auth_gateway_introspections_total{outcome=\"active\"}"

        // Verified with Glewlwyd's JWKS, introspected once, then answered from the cache.
        for _ in 0..<3 {
            let response = try await gateway.send(.get("/api", token: token))
            #expect(response.status == 200, "\(response.text)")
            #expect(response.echoedHeader("x-user-subject") == [subject])
            #expect(response.echoedHeader("x-client") == [GlewlwydServer.clientID])
            #expect(response.echoedHeader("x-user-scope") == [GlewlwydServer.scope])
        }
        #expect(try await RefreshTests.metric(active, adminPort: gateway.adminPort) == 1)
        #expect(gateway.backend.requestCount == 3)

        // Revoked at Glewlwyd: the JWT still verifies (its exp is minutes away) ...
        try await glewlwyd.revoke(token)
        #expect(try await glewlwyd.introspect(token)["active"] == .bool(false))
        // ... and the gateway's active answer stands for up to cacheSeconds (docs/authentication.md) ...
        #expect(try await gateway.send(.get("/api", token: token)).status == 200)
        #expect(gateway.backend.requestCount == 4)
        // ... after which Glewlwyd is asked again and says it is inactive.
        clock.advance(by: Double(Self.cacheSeconds + 1))
        let refused = try await gateway.send(.get("/api", token: token))
        #expect(refused.status == 401)
        #expect(Self.problemType(refused) == "urn:auth-gateway:problem:token.inactive")
        #expect(gateway.backend.requestCount == 4)
        #expect(
            try await RefreshTests.metric(
                "auth_gateway_introspections_total{outcome=\"inactive\"}", adminPort: gateway.adminPort) == 1)

        // A made-up opaque token: Glewlwyd does not know it.
        let madeUp = try await gateway.send(.get("/api", token: "made-up-\(UUID().uuidString)"))
        #expect(madeUp.status == 401)
        #expect(Self.problemType(madeUp) == "urn:auth-gateway:problem:token.inactive")
        #expect(gateway.backend.requestCount == 4)

        // Without forJWTs the same revoked JWT passes: only its signature and claims are checked.
        let plain = try await Self.gateway(glewlwyd, clock: TestClock(), forJWTs: false)
        atTestEnd { await plain.stop() }
        let passed = try await plain.send(.get("/api", token: token))
        #expect(passed.status == 200)
        #expect(passed.echoedHeader("x-user-subject") == [subject])
        #expect(try await RefreshTests.metric(active, adminPort: plain.adminPort) ?? 0 == 0)
    }
}
