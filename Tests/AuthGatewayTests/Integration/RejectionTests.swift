import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Every refused request gets its documented status (docs/errors.md) with a problem document, and reaches no backend.
@Suite("Rejections (real sockets)", .awaitsCleanups)
struct RejectionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let headers: [(String, String)]
        let status: Int
        let errorType: String
        /// Expected `error=` attribute of WWW-Authenticate, nil when the header has none.
        let challengeError: String?
        var testDescription: String { self.name }
    }

    static let now = Date().timeIntervalSince1970
    static let cases: [Case] = [
        Case(name: "no token", headers: [], status: 401, errorType: "token.missing", challengeError: nil),
        Case(
            name: "Basic credentials are not a token", headers: [("Authorization", "Basic YWxpY2U6cHc=")], status: 401,
            errorType: "token.missing", challengeError: nil),
        Case(
            name: "bad signature", headers: [("Authorization", "Bearer " + TestKeys.token(signer: TestKeys.otherRSA))],
            status: 401, errorType: "token.bad_signature", challengeError: "invalid_token"),
        Case(
            name: "expired", headers: [("Authorization", "Bearer " + TestKeys.token(expiresIn: -5))], status: 401,
            errorType: "token.expired", challengeError: "invalid_token"),
        Case(
            name: "wrong audience", headers: [("Authorization", "Bearer " + TestKeys.token(audience: "someone-else"))],
            status: 401, errorType: "token.wrong_audience", challengeError: "invalid_token"),
        Case(
            name: "unknown issuer",
            headers: [("Authorization", "Bearer " + TestKeys.token(issuer: "https://evil.test"))], status: 401,
            errorType: "token.wrong_issuer", challengeError: "invalid_token"),
        Case(
            name: "alg none", headers: [("Authorization", "Bearer " + RejectionTests.unsignedToken())], status: 401,
            errorType: "token.unsupported_algorithm", challengeError: "invalid_token"),
        Case(
            name: "garbage", headers: [("Authorization", "Bearer not.a.jwt")], status: 401,
            errorType: "token.malformed", challengeError: "invalid_token"),
        Case(
            name: "two different tokens",
            headers: [
                ("Authorization", "Bearer " + TestKeys.token(subject: "a")),
                ("Cookie", "access_token=" + TestKeys.token(subject: "b")),
            ],
            status: 400, errorType: "request.ambiguous_token", challengeError: nil
        ),
    ]

    static func unsignedToken() -> String {
        let header = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let claims = Base64URL.encode(
            Array(#"{"iss":"https://issuer.test","sub":"x","aud":"gateway-tests","exp":4102444800}"#.utf8))
        return "\(header).\(claims)."
    }

    @Test(arguments: Self.cases)
    func refusedAndNeverForwarded(_ testCase: Case) async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(TestRequest(.GET, "/secret", headers: testCase.headers))
        #expect(response.status == testCase.status)
        #expect(response.header("content-type") == "application/problem+json")
        let problem = try #require(response.json)
        #expect(problem["status"]?.numberValue?.exactInt == testCase.status)
        #expect(problem["type"]?.stringValue == "urn:auth-gateway:problem:\(testCase.errorType)")
        // Both sides must be present: two missing ids would compare equal.
        let requestID = try #require(response.header("x-request-id"))
        #expect(RequestID.isWellFormed(requestID))
        #expect(try #require(problem["requestId"]?.stringValue) == requestID)
        #expect(problem["title"]?.stringValue?.isEmpty == false)
        #expect(problem["detail"]?.stringValue?.isEmpty == false)
        if testCase.status == 401 {
            let challenge = try #require(response.header("www-authenticate"))
            #expect(challenge.hasPrefix("Bearer realm=\"auth-gateway\""))
            if let error = testCase.challengeError {
                #expect(challenge.contains("error=\"\(error)\""))
                #expect(challenge.contains("error_description="))
            } else {
                #expect(!challenge.contains("error="))
            }
        }
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func forbiddenCarriesInsufficientScope() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["routes"] = [
                ["name": "admin", "pathPrefix": "/", "backend": "api", "require": ["claims.roles": "admin"]]
            ]
        }
        atTestEnd { await gateway.stop() }
        let reader = TestKeys.token(extra: ["roles": ["reader"]])
        let refused = try await gateway.send(.get("/admin", token: reader))
        #expect(refused.status == 403)
        #expect(refused.header("www-authenticate")?.contains("error=\"insufficient_scope\"") == true)
        #expect(gateway.backend.requestCount == 0)
        let admin = TestKeys.token(extra: ["roles": ["reader", "admin"]])
        #expect(try await gateway.send(.get("/admin", token: admin)).status == 200)
    }

    /// Once a route matched, its name labels the request in the metrics and the access log,
    /// also when the gateway answers itself; "-" only when no route matched.
    @Test func rejectedRequestsAreCountedUnderTheirRoute() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["routes"] = [
                ["name": "admin", "pathPrefix": "/admin/", "backend": "api", "require": ["claims.roles": "admin"]],
                ["name": "default", "path": "/only", "backend": "api"],
            ]
        }
        atTestEnd { await gateway.stop() }
        #expect(try await gateway.send(.get("/only")).status == 401)
        #expect(try await gateway.send(.get("/only", token: TestKeys.token(expiresIn: -10))).status == 401)
        #expect(try await gateway.send(.get("/admin/x", token: TestKeys.token())).status == 403)
        #expect(try await gateway.send(.get("/nowhere")).status == 404)
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(
            metrics.contains(
                "auth_gateway_requests_total{route=\"default\",status_class=\"4xx\",protocol=\"http/1.1\"} 2\n"))
        #expect(
            metrics.contains(
                "auth_gateway_requests_total{route=\"admin\",status_class=\"4xx\",protocol=\"http/1.1\"} 1\n"))
        #expect(
            metrics.contains("auth_gateway_requests_total{route=\"-\",status_class=\"4xx\",protocol=\"http/1.1\"} 1\n"))
    }

    @Test func optionalAndNoneRoutes() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
            config["routes"] = [
                ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "none"],
                ["name": "maybe", "pathPrefix": "/", "backend": "api", "auth": "optional"],
            ]
        }
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        // optional without a token: forwarded without identity; client-sent identity stripped.
        let anonymous = try await client.send(.get("/feed", headers: [("X-User-Subject", "forged")]))
        #expect(anonymous.status == 200)
        #expect(anonymous.echoedHeader("x-user-subject").isEmpty)
        // optional with a valid token: identity added.
        #expect(
            try await client.send(.get("/feed", token: TestKeys.token(subject: "bob"))).echoedHeader("x-user-subject")
                == ["bob"])
        // optional with an invalid token: refused.
        #expect(try await client.send(.get("/feed", token: TestKeys.token(expiresIn: -10))).status == 401)
        // none: even a garbage token is ignored, identity headers are still stripped.
        let open = try await client.send(.get("/open/x", token: "garbage", headers: [("X-User-Subject", "forged")]))
        #expect(open.status == 200)
        #expect(open.echoedHeader("x-user-subject").isEmpty)
        await client.close()
    }

    @Test func forwardAccessTokenFalseRemovesTheToken() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["routes"] = [["name": "private", "pathPrefix": "/", "backend": "api", "forwardAccessToken": false]]
        }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        let viaHeader = try await gateway.send(.get("/x", token: token))
        #expect(viaHeader.status == 200)
        #expect(viaHeader.echoedHeader("authorization").isEmpty)
        let viaCookie = try await gateway.send(
            TestRequest(.GET, "/x", headers: [("Cookie", "theme=dark; access_token=\(token)")]))
        #expect(viaCookie.status == 200)
        #expect(viaCookie.echoedHeader("cookie") == ["theme=dark"])
    }

    @Test func aWebSocketUpgradeToABackendThatDoesNotSwitchGetsItsAnswerNotAHang() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        try await raw.send(
            "GET /ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestKeys.token())\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
        #expect(await raw.waitFor { $0.contains("\"uri\"") })
        #expect(raw.firstStatus == 200)
        #expect(gateway.backend.requestCount == 1)
    }

    @Test func aWebSocketUpgradeMustBeABodilessHTTP11Get() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        try await raw.send(
            "POST /ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestKeys.token())\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\nhi"
        )
        #expect(await raw.waitForClose())
        #expect(raw.firstStatus == 400)
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func tokensMadeByAnIndependentImplementationPassTheWholeGateway() async throws {
        // The committed vectors (Python cryptography/joserfc) at their fixed clock.
        let vectors = try JSONValue(parsing: String(contentsOf: FixturePaths.url("jwt/vectors.json"), encoding: .utf8))
        let now = try #require(vectors["now"]?.numberValue?.double)
        let tokens = try #require(vectors["vectors"]?.arrayValue)
        func token(_ name: String) throws -> String {
            try #require(tokens.first { $0["name"]?.stringValue == name }?["token"]?.stringValue)
        }
        let good = try await GatewayFixture.start(clock: TestClock(fixed: now)) { config in
            config["tokens"] = [
                "issuers": [
                    [
                        "issuer": "https://issuer.test", "audiences": ["gateway-tests"], "leewaySeconds": 30,
                        "requiredClaims": ["sub"],
                        "keys": [
                            [
                                "kid": "rsa-1", "algorithm": "RS256",
                                "certificatePEMFile": .string(FixturePaths.url("jwt/keys/rsa.cert.pem").path),
                            ],
                            [
                                "kid": "ec256-1", "algorithm": "ES256",
                                "publicKeyPEMFile": .string(FixturePaths.url("jwt/keys/ec256.pub.pem").path),
                            ],
                            [
                                "kid": "ed-1", "algorithm": "EdDSA",
                                "publicKeyPEMFile": .string(FixturePaths.url("jwt/keys/ed25519.pub.pem").path),
                            ],
                        ],
                    ]
                ]
            ]
        }
        atTestEnd { await good.stop() }
        let client = try await good.connect()
        for name in ["valid-rs256", "valid-es256", "valid-eddsa"] {
            #expect(try await client.send(.get("/v", token: token(name))).status == 200, "\(name)")
        }
        for name in [
            "expired", "bad-signature-rs256", "alg-none", "hs256-key-confusion", "jwk-header-injection", "crit-unknown",
            "wrong-audience",
        ] {
            #expect(try await client.send(.get("/v", token: token(name))).status == 401, "\(name)")
        }
        #expect(good.backend.requestCount == 3)
        await client.close()
    }
}

/// Paths of committed test fixtures.
enum FixturePaths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func url(_ relative: String) -> URL { Self.root.appendingPathComponent(relative) }
}
