import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Signed assertions through a running gateway (docs/assertions.md): whatever proved the
/// caller, the echo backend behind it gets one assertion the gateway signed, and a backend's
/// own check of it — Python joserfc against the JWKS the gateway serves on its listener —
/// passes for its route's audience and no other. A client's own assertion header never
/// reaches a backend, over HTTP/1.1 or HTTP/2.
@Suite("Assertions end to end (real sockets, joserfc)", .awaitsCleanups, .timeLimit(.minutes(3)))
struct AssertionEndToEndTests {
    static let apiKey = APIKeyEntry.new(id: "ci-bot")

    /// The test issuer (JWTs from `TestKeys`), as the plain fixture configures it.
    static var testIssuer: JSONValue {
        GatewayFixture.baseConfiguration(backendURL: "http://127.0.0.1:9")["tokens"]?["issuers"]?.arrayValue?.first
            ?? .null
    }

    /// Routes: `/orders/` signs for `orders-api` (and signs browsers in), `/billing/` for the
    /// default audience (its backend's name, `api`), `/plain/` and `/open/` sign nothing.
    static func routes() -> JSONValue {
        [
            [
                "name": "orders", "pathPrefix": "/orders/", "backend": "api", "signIn": true,
                "assertion": ["audience": "orders-api", "claims": ["email": "claims.email"]],
            ],
            ["name": "billing", "pathPrefix": "/billing/", "backend": "api", "assertion": true],
            ["name": "plain", "pathPrefix": "/plain/", "backend": "api"],
            ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "none"],
        ]
    }

    @Test("a JWT, an introspected opaque token, an API key, a browser session and a DPoP-bound JWT: each verified")
    func everyCredential() async throws {
        let keys = try IdentityPeers.KeysFile()
        try keys.write([try IdentityPeers.entry("k1", "current")])
        let introspection = try await ScriptedIntrospection.start()
        atTestEnd { await introspection.service.stop() }
        let introspectionURL = introspection.service.baseURL + "/oauth2/introspect"
        var keyEntry = Self.apiKey.entry
        keyEntry.claims = ["sub": "ci-bot", "email": "ci-bot@example.com"]
        let keyJSON = keyEntry.json
        let fixture = try await SignInFixture.start { document in
            var tokens = document["tokens"]?.objectValue ?? JSONObject()
            tokens["issuers"] = .array((tokens["issuers"]?.arrayValue ?? []) + [Self.testIssuer])
            tokens["introspection"] = [
                "url": .string(introspectionURL), "clientId": "gateway", "clientSecret": "s3cret",
                "issuer": "https://idp.test", "cacheSeconds": 60, "timeoutMilliseconds": 120_000,
            ]
            tokens["apiKeys"] = ["keys": [keyJSON]]
            document["tokens"] = .object(tokens)
            document["identityAssertion"] = IdentityPeers.section(keys)
            document["routes"] = Self.routes()
        }
        atTestEnd { await fixture.stop() }
        let gateway = fixture.gateway

        // 1. A JWT.
        let jwt = try await gateway.send(.get("/orders/1", token: TestKeys.token(subject: "ada")))
        // 2. An opaque token, introspected.
        introspection.set(
            "opaque-grace", IntrospectionTests.activeAnswer(subject: "grace", clock: fixture.gateway.clock))
        let opaque = try await gateway.send(.get("/orders/2", token: "opaque-grace"))
        // 3. An API key.
        let apiKey = try await gateway.send(TestRequest(.GET, "/orders/3", headers: [("X-API-Key", Self.apiKey.key)]))
        // 4. A browser session.
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/orders/4")
        let session = try await browser.get(gateway, "/orders/4")
        // 5. A DPoP-bound JWT with its proof.
        let client = try await DPoPTests.clientKey()
        let bound = DPoPTests.boundToken(client, subject: "lin")
        let proof = try await DPoPTests.proof(
            client, url: "http://127.0.0.1:\(gateway.port)/orders/5", token: bound)
        let dpop = try await DPoPTests.send(
            gateway, "/orders/5", [("Authorization", "DPoP \(bound)"), ("DPoP", proof)])
        // The same JWT on the other route: another audience.
        let billing = try await gateway.send(.get("/billing/1", token: TestKeys.token(subject: "ada")))

        let responses = [jwt, opaque, apiKey, session, dpop]
        let assertions = try responses.map { try IdentityPeers.assertion($0) }
        let billingAssertion = try IdentityPeers.assertion(billing)
        let jwks = try await IdentityPeers.jwks(port: gateway.port)
        // The backend's clock: after every assertion was signed.
        let now = Date().timeIntervalSince1970
        let verdicts = try await IdentityPeers.verify(
            jwks: jwks, now: now,
            assertions.map { .init(token: $0, audience: "orders-api") } + [
                .init(token: billingAssertion, audience: "api"),
                // Each refused by the other route's backend.
                .init(token: billingAssertion, audience: "orders-api"),
                .init(token: assertions[0], audience: "api"),
                // And by a backend that expects another typ.
                .init(token: assertions[0], audience: "orders-api", typ: "txntoken+jwt"),
            ])
        let expected: [(sub: String?, auth: String)] = [
            ("ada", "jwt"), ("grace", "introspection"), ("ci-bot", "apikey"), (nil, "session"), ("lin", "jwt"),
        ]
        for (index, verdict) in verdicts.prefix(5).enumerated() {
            #expect(verdict["ok"] == true, "\(expected[index].auth): \(verdict)")
            #expect(verdict["claims"]?["auth"]?.stringValue == expected[index].auth, "\(verdict)")
            if let sub = expected[index].sub { #expect(verdict["claims"]?["sub"]?.stringValue == sub) }
            #expect(verdict["header"]?["kid"] == "k1")
            #expect(verdict["header"]?["alg"] == "ES256")
            let claims = try #require(verdict["claims"])
            let issued = try #require(claims["iat"]?.numberValue?.double)
            let expires = try #require(claims["exp"]?.numberValue?.double)
            #expect(expires > now && expires <= issued + 60, "exp within lifetimeSeconds: \(claims)")
            #expect(claims["jti"]?.stringValue?.isEmpty == false)
        }
        // The session's subject is the provider's user; the mapped claim; the DPoP key.
        #expect(verdicts[3]["claims"]?["sub"]?.stringValue?.isEmpty == false)
        #expect(verdicts[0]["claims"]?["email"] == "ada@example.com")
        #expect(verdicts[2]["claims"]?["email"] == "ci-bot@example.com")
        #expect(verdicts[4]["claims"]?["cnf"] == ["jkt": .string(client.jkt)])
        #expect(verdicts[0]["claims"]?["cnf"] == nil)
        #expect(verdicts[5]["ok"] == true, "billing's assertion for api: \(verdicts[5])")
        #expect(verdicts[5]["claims"]?["aud"] == "api")
        #expect(verdicts[6]["ok"] == false, "billing's assertion is refused by orders-api")
        #expect(verdicts[7]["ok"] == false, "orders' assertion is refused by api")
        #expect(verdicts[8]["ok"] == false, "typ is JWT")
        // Past its exp, the backend refuses it.
        let late = try await IdentityPeers.verify(
            jwks: jwks, now: now + 120, [.init(token: assertions[0], audience: "orders-api")])
        #expect(late[0]["ok"] == false)
        #expect(late[0]["error"]?.stringValue?.contains("xpired") == true, "\(late)")
    }

    /// A gateway signing on `/orders/` and `/billing/` (format `format`), nothing on `/plain/`
    /// and `/open/`.
    static func gateway(format: String = "jwt") async throws -> GatewayFixture {
        let keys = try IdentityPeers.KeysFile()
        try keys.write([try IdentityPeers.entry("k1", "current")])
        let gateway = try await GatewayFixture.start { config in
            config["identityAssertion"] = IdentityPeers.section(keys, format: format)
            config["routes"] = [
                [
                    "name": "orders", "pathPrefix": "/orders/", "backend": "api",
                    "assertion": ["audience": "orders-api"],
                ],
                ["name": "billing", "pathPrefix": "/billing/", "backend": "api", "assertion": true],
                ["name": "plain", "pathPrefix": "/plain/", "backend": "api"],
                ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "none"],
            ]
        }
        atTestEnd { await gateway.stop() }
        return gateway
    }

    static let forged = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiIsImF1ZCI6Im9yZGVycy1hcGkifQ."

    /// docs/assertions.md, "Reuse and cost": a keep-alive client's repeated request reuses its
    /// assertion and is not counted again; another caller's is signed and counted. The admin
    /// listener publishes the same JWKS as the main one.
    @Test("a repeated request reuses its assertion; auth_gateway_assertions_signed_total counts signatures")
    func reuseAndTheSignatureCount() async throws {
        let gateway = try await Self.gateway()
        let connection = try await TestConnection.connect(port: gateway.port)
        atTestEnd { await connection.close() }
        let ada = TestKeys.token(subject: "ada")
        let first = try IdentityPeers.assertion(try await connection.send(.get("/orders/1", token: ada)))
        let again = try IdentityPeers.assertion(try await connection.send(.get("/orders/2", token: ada)))
        let grace = try IdentityPeers.assertion(
            try await connection.send(.get("/orders/3", token: TestKeys.token(subject: "grace"))))
        #expect(again == first, "the same inputs on the same loop: the assertion is reused")
        #expect(grace != first)
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains("\nauth_gateway_assertions_signed_total 2\n"), "\(metrics)")

        let published = try await IdentityPeers.jwks(port: gateway.port)
        #expect(try await IdentityPeers.jwks(port: gateway.adminPort, path: "/.well-known/jwks.json") == published)
        let verdicts = try await IdentityPeers.verify(
            jwks: published, [.init(token: first, audience: "orders-api"), .init(token: grace, audience: "orders-api")])
        #expect(verdicts.allSatisfy { $0["ok"] == true }, "\(verdicts)")
    }

    @Test("HTTP/1.1: a client's assertion header reaches no backend, on any route; the gateway's own does")
    func clientAssertionStrippedOverHTTP1() async throws {
        let gateway = try await Self.gateway()
        let token = TestKeys.token(subject: "ada")
        let forgeries = [("X-Gateway-Assertion", Self.forged), ("x-gateway-assertion", "second")]
        let signed = try await gateway.send(.get("/orders/1", token: token, headers: forgeries))
        let assertion = try IdentityPeers.assertion(signed)
        #expect(assertion != Self.forged && assertion != "second")
        let verdict = try await IdentityPeers.verify(
            jwks: try await IdentityPeers.jwks(port: gateway.port), [.init(token: assertion, audience: "orders-api")])
        #expect(verdict[0]["ok"] == true, "\(verdict)")
        #expect(verdict[0]["claims"]?["sub"] == "ada")
        for path in ["/plain/1", "/open/1"] {
            let response = try await gateway.send(.get(path, token: token, headers: forgeries))
            #expect(response.status == 200)
            #expect(response.echoedHeader("x-gateway-assertion") == [], "\(path)")
        }
        let anonymous = try await gateway.send(.get("/open/2", headers: forgeries))
        #expect(anonymous.echoedHeader("x-gateway-assertion") == [])
        #expect(gateway.backend.requestCount == 4)
    }

    @Test("HTTP/2: a client's assertion header reaches no backend, on any route; the gateway's own does")
    func clientAssertionStrippedOverHTTP2() async throws {
        let gateway = try await Self.gateway()
        let token = TestKeys.token(subject: "grace")
        func send(_ path: String) async throws -> JSONValue {
            let response = HTTP2ClientTests.parse(
                try await HTTP2ClientTests.curl([
                    "--http2-prior-knowledge", "--include", "-H", "Authorization: Bearer \(token)",
                    "-H", "X-Gateway-Assertion: \(Self.forged)", "-H", "x-gateway-assertion: second",
                    "http://127.0.0.1:\(gateway.port)\(path)",
                ]).stdout)
            #expect(response.version == "HTTP/2")
            #expect(response.status == 200, "\(response.body)")
            return try #require(try JSONValue(parsing: response.body)["headers"])
        }
        let signed = try await send("/billing/1")
        let values = signed["x-gateway-assertion"]?.arrayValue?.compactMap(\.stringValue) ?? []
        try #require(values.count == 1, "\(values)")
        #expect(values[0] != Self.forged && values[0] != "second")
        let verdict = try await IdentityPeers.verify(
            jwks: try await IdentityPeers.jwks(port: gateway.port), [.init(token: values[0], audience: "api")])
        #expect(verdict[0]["ok"] == true, "\(verdict)")
        for path in ["/plain/1", "/open/1"] {
            #expect(try await send(path)["x-gateway-assertion"] == nil, "\(path)")
        }
    }

    @Test("txn-token: a client's Txn-Token reaches no backend; the gateway's verifies with typ txntoken+jwt")
    func clientTransactionTokenStripped() async throws {
        let gateway = try await Self.gateway(format: "txn-token")
        let forgeries = [("Txn-Token", Self.forged)]
        let signed = try await gateway.send(
            .get("/orders/1", token: TestKeys.token(subject: "ada"), headers: forgeries))
        let token = try IdentityPeers.assertion(signed, header: "Txn-Token")
        #expect(signed.echoedHeader("x-gateway-assertion") == [])
        let verdict = try await IdentityPeers.verify(
            jwks: try await IdentityPeers.jwks(port: gateway.port),
            [.init(token: token, audience: "orders-api", typ: "txntoken+jwt")])
        #expect(verdict[0]["ok"] == true, "\(verdict)")
        #expect(verdict[0]["claims"]?["rctx"]?["method"] == "GET")
        let plain = try await gateway.send(.get("/plain/1", token: TestKeys.token(), headers: forgeries))
        #expect(plain.echoedHeader("txn-token") == [])
    }
}
