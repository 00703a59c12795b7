import Crypto
import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// OpenID Connect discovery end to end (docs/authentication.md) against `ScriptedOIDCProvider`:
/// keys, refresh and userinfo all through the endpoints its document names.
@Suite("OpenID Connect discovery (real sockets)", .awaitsCleanups)
struct DiscoveryTests {
    /// A gateway whose only knowledge of the provider is its issuer: `discovery: true`, the
    /// client id and secret (the minimal configuration of docs/authentication.md), plus test timings.
    static func gateway(
        provider: ScriptedOIDCProvider, refresh: Int = 300, minRefetch: Int = 10, authServiceURL: String? = nil,
        waitUntilReady: Bool = true,
        introspection: JSONObject? = nil
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start(waitUntilReady: waitUntilReady) { config in
            config["eventLoopThreads"] = 2
            config["tokens"] = [
                "issuers": [
                    [
                        "issuer": .string(provider.issuer), "discovery": true,
                        "audiences": [.string(TestKeys.audience)], "leewaySeconds": 0,
                        "jwksRefreshSeconds": .number(JSONNumber(refresh)),
                        "jwksMinRefetchSeconds": .number(JSONNumber(minRefetch)),
                    ]
                ]
            ]
            var authService: JSONObject = [
                "discoveryIssuer": .string(provider.issuer),
                "timeoutMilliseconds": 60_000,
                "refresh": [
                    "clientId": .string(ScriptedOIDCProvider.clientID),
                    "clientSecret": .string(ScriptedOIDCProvider.clientSecret), "maxExpiredSeconds": 3600,
                ],
                "profile": [:],
            ]
            if let authServiceURL { authService["url"] = .string(authServiceURL) }
            config["authService"] = .object(authService)
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "profile.email"]
            if let introspection { config.set("tokens.introspection", .object(introspection)) }
        }
    }

    static func admin(_ gateway: GatewayFixture, _ path: String) async throws -> TestResponse {
        let connection = try await TestConnection.connect(port: gateway.adminPort)
        return try await withCleanup({ await connection.close() }) { () async throws in
            return try await connection.send(.get(path))
        }
    }

    /// The `/healthz` entry of the provider's issuer.
    static func issuerHealth(_ gateway: GatewayFixture, _ provider: ScriptedOIDCProvider) async throws -> JSONValue? {
        try await Self.admin(gateway, "/healthz").json?["checks"]?["keys"]?[provider.issuer]
    }

    /// Start-up fetches the document and the JWKS it names once each (docs/operations.md), then the
    /// periodic refresh fetches both again; tokens verify against the discovered keys and the
    /// profile comes from the discovered userinfo endpoint, on another port.
    @Test func keysAndProfilesComeFromTheDiscoveredEndpoints() async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        let gateway = try await Self.gateway(provider: provider, refresh: 2, waitUntilReady: false)
        atTestEnd { await gateway.stop() }
        let refresher = Task { try await KeyRefreshService(application: gateway.application).run() }
        defer { refresher.cancel() }
        try await poll { gateway.application.isReady }
        #expect(provider.documentFetches == 1)
        #expect(provider.jwksFetches == 1)

        let response = try await gateway.send(.get("/hello", token: provider.token(subject: "ada")))
        #expect(response.status == 200)
        #expect(response.echoedHeader("x-user-subject") == ["ada"])
        #expect(response.echoedHeader("x-user-email") == ["ada@idp.test"])
        #expect(provider.userinfoCalls == 1)
        let userinfo = try #require(provider.endpoints.requests.first { $0.path == "/userinfo" })
        #expect(userinfo.headers.first(name: "authorization")?.hasPrefix("Bearer ") == true)

        let health = try #require(try await Self.issuerHealth(gateway, provider))
        #expect(health["status"]?.stringValue == "ok")
        #expect(health["source"]?.stringValue == "discovery \(provider.issuer)/.well-known/openid-configuration")
        #expect(health["discovery"]?["status"]?.stringValue == "ok")
        #expect(health["discovery"]?["jwksURI"]?.stringValue == provider.issuer + "/jwks")
        #expect(health["discovery"]?["tokenEndpoint"]?.stringValue == provider.endpoints.baseURL + "/token")
        #expect(health["discovery"]?["userinfoEndpoint"]?.stringValue == provider.endpoints.baseURL + "/userinfo")
        #expect(health["discovery"]?["ageSeconds"]?.numberValue != nil)
        #expect(health["discovery"]?["lastError"] == nil)
        let authService = try await Self.admin(gateway, "/healthz").json?["checks"]?["authService"]
        #expect(authService?["discoveryIssuer"]?.stringValue == provider.issuer)
        #expect(authService?["userinfoEndpoint"]?.stringValue == provider.endpoints.baseURL + "/userinfo")
        #expect(authService?["status"]?.stringValue == "ok")

        // The document is refetched with the JWKS.
        try await poll { provider.documentFetches >= 2 && provider.jwksFetches >= 2 }
        let metrics = try await Self.admin(gateway, "/metrics").text
        #expect(
            metrics.contains(
                "auth_gateway_discovery_fetches_total{issuer=\"\(provider.issuer)\",result=\"updated\"} 1\n"))
        #expect(
            metrics.contains("auth_gateway_discovery_fetches_total{issuer=\"\(provider.issuer)\",result=\"unchanged\"}")
        )
        #expect(metrics.contains("auth_gateway_discovery_document_age_seconds{issuer=\"\(provider.issuer)\"}"))
    }

    /// An expired session is refreshed at the discovered `token_endpoint` (HTTP Basic client
    /// authentication), the new token verified with the discovered keys, and the profile read
    /// from `userinfo_endpoint` with it — all on another origin than the issuer, with no
    /// `authService.url`, or with one that is never called.
    @Test(arguments: [false, true])
    func aSessionIsRefreshedAndProfiledThroughDiscoveredEndpoints(withUnusedAuthServiceURL: Bool) async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        let unused = try RefusingPort()
        let gateway = try await Self.gateway(
            provider: provider, authServiceURL: withUnusedAuthServiceURL ? unused.url : nil)
        atTestEnd { await gateway.stop() }
        #expect(gateway.application.isReady)

        let expired = provider.token(subject: "grace", expiresIn: -60)
        let refreshToken = provider.login(subject: "grace")
        let response = try await gateway.send(
            TestRequest(.GET, "/r", headers: [("Cookie", "access_token=\(expired); refresh_token=\(refreshToken)")]))
        #expect(response.status == 200)
        #expect(response.echoedHeader("x-user-subject") == ["grace"])
        #expect(response.echoedHeader("x-user-email") == ["grace@idp.test"])
        let cookies = response.headers["set-cookie"]
        let access = try #require(cookies.first { $0.hasPrefix("access_token=") })
        let newAccess = String(access.dropFirst("access_token=".count).prefix { $0 != ";" })
        #expect(newAccess != expired)
        #expect(
            cookies.contains { $0.hasPrefix("refresh_token=rt-") && !$0.hasPrefix("refresh_token=\(refreshToken);") })
        #expect(response.echoedHeader("cookie") == ["access_token=\(newAccess)"])

        #expect(provider.tokenCalls == 1)
        let tokenCall = try #require(provider.endpoints.requests.first { $0.path == "/token" })
        #expect(tokenCall.headers.first(name: "host") == "127.0.0.1:\(provider.endpoints.port)")
        #expect(tokenCall.bodyText == "grant_type=refresh_token&refresh_token=\(refreshToken)")
        // The profile was fetched with the new token.
        let userinfo = try #require(provider.endpoints.requests.first { $0.path == "/userinfo" })
        #expect(userinfo.headers.first(name: "authorization") == "Bearer \(newAccess)")
        // Nothing went to the issuer's origin but the document and the keys.
        #expect(Set(provider.discovery.requests.map(\.path)) == ["/.well-known/openid-configuration", "/jwks"])

        // A refresh token the provider refuses: 401 and sign-out.
        let refused = try await gateway.send(
            TestRequest(.GET, "/r", headers: [("Cookie", "access_token=\(expired); refresh_token=rt-unknown")]))
        #expect(refused.status == 401)
        #expect(refused.headers["set-cookie"].contains { $0.hasPrefix("refresh_token=;") })
    }

    /// docs/authentication.md: a document whose `issuer` is not exactly the configured one is
    /// refused; the issuer stays unready, `/readyz` and `/healthz` say why, no keys are fetched
    /// from the `jwks_uri` it names, and tokens of that issuer get 503 (nothing could be checked).
    @Test func aMismatchedIssuerKeepsTheIssuerUnreadyWithTheReason() async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        provider.update { $0.claimedIssuer = "https://attacker.test" }
        let gateway = try await Self.gateway(provider: provider, waitUntilReady: false)
        atTestEnd { await gateway.stop() }
        try await poll {
            provider.documentFetches >= 1
                && gateway.application.shared.keyStore.unreadyReason?.contains("attacker") == true
        }
        #expect(!gateway.application.isReady)
        #expect(provider.jwksFetches == 0)

        let reason =
            "the discovery document's issuer \"https://attacker.test\" is not the configured issuer \"\(provider.issuer)\""
        let ready = try await Self.admin(gateway, "/readyz")
        #expect(ready.status == 503)
        #expect(ready.json?["reason"]?.stringValue == "signing keys not loaded for \(provider.issuer): \(reason)")
        let health = try await Self.admin(gateway, "/healthz")
        #expect(health.status == 503)
        #expect(health.json?["status"]?.stringValue == "unavailable")
        let issuer = try #require(health.json?["checks"]?["keys"]?[provider.issuer])
        #expect(issuer["status"]?.stringValue == "unavailable")
        #expect(issuer["lastError"]?.stringValue == reason)
        #expect(issuer["discovery"]?["status"]?.stringValue == "unavailable")
        #expect(issuer["discovery"]?["lastError"]?.stringValue == reason)
        #expect(issuer["discovery"]?["jwksURI"] == nil)

        let refused = try await gateway.send(.get("/x", token: provider.token(subject: "eve")))
        #expect(refused.status == 503)
        #expect(refused.json?["type"]?.stringValue == "urn:auth-gateway:problem:keys.unavailable")
        #expect(gateway.backend.requestCount == 0)
        let metrics = try await Self.admin(gateway, "/metrics").text
        #expect(
            metrics.contains("auth_gateway_discovery_fetches_total{issuer=\"\(provider.issuer)\",result=\"error\"}"))
    }

    /// Discovery down at start: unready (with the reason), then ready once the provider is back,
    /// by the refresh service's backoff — no request needed.
    @Test func discoveryDownAtStartThenReadyWhenItComesBack() async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        provider.update { $0.documentStatus = 503 }
        let gateway = try await Self.gateway(provider: provider, waitUntilReady: false)
        atTestEnd { await gateway.stop() }
        let refresher = Task { try await KeyRefreshService(application: gateway.application).run() }
        defer { refresher.cancel() }
        try await poll {
            provider.documentFetches >= 1
                && gateway.application.shared.keyStore.unreadyReason?.contains("HTTP 503") == true
        }
        #expect(!gateway.application.isReady)
        let ready = try await Self.admin(gateway, "/readyz")
        #expect(ready.status == 503)
        #expect(
            ready.json?["reason"]?.stringValue == "signing keys not loaded for \(provider.issuer): discovery: HTTP 503")
        #expect(try await Self.issuerHealth(gateway, provider)?["lastError"]?.stringValue == "discovery: HTTP 503")
        #expect(try await gateway.send(.get("/early", token: provider.token(subject: "bo"))).status == 503)

        provider.update { $0.documentStatus = 200 }
        try await poll { gateway.application.isReady }
        #expect(try await Self.admin(gateway, "/readyz").status == 200)
        #expect(try await gateway.send(.get("/late", token: provider.token(subject: "bo"))).status == 200)
        let health = try #require(try await Self.issuerHealth(gateway, provider))
        #expect(health["status"]?.stringValue == "ok")
        #expect(health["discovery"]?["lastError"] == nil)
    }

    /// A failed refetch keeps the last good document: its `jwks_uri` still serves a key
    /// rotation (an unknown `kid` refetches the document, which fails, then the JWKS), its
    /// `userinfo_endpoint` still serves profiles, and `/healthz` reports `degraded` with why.
    @Test func theLastGoodDocumentIsKeptWhenDiscoveryFails() async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        let gateway = try await Self.gateway(provider: provider, minRefetch: 1)
        atTestEnd { await gateway.stop() }
        #expect(gateway.application.isReady)
        #expect(try await gateway.send(.get("/a", token: provider.token(subject: "cy"))).status == 200)

        provider.update { $0.documentStatus = 500 }
        let rotated = JWTSigner(key: .es256(P256.Signing.PrivateKey()), kid: "rotated")
        provider.update { $0.signers = [TestKeys.rsa, rotated] }
        try await Task.sleep(for: .milliseconds(1100))  // past jwksMinRefetchSeconds
        let response = try await gateway.send(.get("/b", token: provider.token(subject: "dee", signer: rotated)))
        #expect(response.status == 200)
        #expect(response.echoedHeader("x-user-email") == ["dee@idp.test"])
        #expect(provider.documentFetches == 2)
        #expect(provider.jwksFetches == 2)

        #expect(gateway.application.isReady)
        let health = try await Self.admin(gateway, "/healthz")
        #expect(health.status == 200)
        #expect(health.json?["status"]?.stringValue == "degraded")
        let issuer = try #require(health.json?["checks"]?["keys"]?[provider.issuer])
        #expect(issuer["status"]?.stringValue == "degraded")
        #expect(issuer["discovery"]?["status"]?.stringValue == "degraded")
        #expect(issuer["discovery"]?["lastError"]?.stringValue == "discovery: HTTP 500")
        #expect(issuer["discovery"]?["jwksURI"]?.stringValue == provider.issuer + "/jwks")
    }

    /// A reload keeps the accepted document (and the keys) while the issuer is unchanged: no
    /// refetch, no moment of unreadiness; a document without `userinfo_endpoint` is refused
    /// when the profile relies on it.
    @Test func aReloadKeepsTheDocumentAndMissingEndpointsAreRefused() async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        let gateway = try await Self.gateway(provider: provider)
        atTestEnd { await gateway.stop() }
        #expect(gateway.application.isReady)
        try gateway.reload { config in config["logging"] = ["accessLog": false, "level": "error"] }
        #expect(gateway.application.isReady)
        #expect(try await gateway.send(.get("/after-reload", token: provider.token(subject: "fay"))).status == 200)
        #expect(provider.documentFetches == 1)

        let other = try await ScriptedOIDCProvider.start()
        atTestEnd { await other.stop() }
        other.update { $0.servesUserinfo = false }
        let second = try await Self.gateway(provider: other, waitUntilReady: false)
        atTestEnd { await second.stop() }
        try await poll {
            other.documentFetches >= 1
                && second.application.shared.keyStore.unreadyReason?.contains("userinfo_endpoint") == true
        }
        #expect(!second.application.isReady)
        #expect(
            try await Self.issuerHealth(second, other)?["lastError"]?.stringValue
                == "the discovery document has no userinfo_endpoint")
    }

    /// docs/authentication.md: without `tokens.introspection.url`, opaque tokens go to the
    /// discovery document's `introspection_endpoint` (another origin than the issuer), with the
    /// client authenticated as configured; `/healthz` shows the discovered URL. A document without
    /// the endpoint is refused: the issuer is not ready and says why.
    @Test func anOpaqueTokenIsIntrospectedAtTheDiscoveredEndpoint() async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        let introspection: JSONObject = [
            "clientId": .string(ScriptedOIDCProvider.clientID),
            "clientSecret": .string(ScriptedOIDCProvider.clientSecret), "timeoutMilliseconds": 60_000,
        ]
        let gateway = try await Self.gateway(provider: provider, waitUntilReady: false, introspection: introspection)
        atTestEnd { await gateway.stop() }
        try await poll { gateway.application.isReady }
        provider.update {
            $0.introspectable["opaque-grace"] = [
                "active": true, "sub": "grace", "exp": .number(JSONNumber(Int(Date().timeIntervalSince1970) + 600)),
            ]
        }

        // The identity headers ask for the profile too: userinfo, with the opaque token.
        let response = try await gateway.send(.get("/opaque", token: "opaque-grace"))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.echoedHeader("x-user-subject") == ["grace"])
        #expect(response.echoedHeader("x-user-email") == ["grace@idp.test"])
        #expect(provider.introspectionCalls == 1)
        let call = try #require(provider.endpoints.requests.first { $0.path == "/introspect" })
        #expect(call.bodyText == "token=opaque-grace&token_type_hint=access_token")
        #expect(try await gateway.send(.get("/opaque", token: "opaque-unknown")).status == 401)
        #expect(provider.introspectionCalls == 2)
        let health = try await Self.admin(gateway, "/healthz").json?["checks"]?["introspection"]
        #expect(health?["discoveryIssuer"]?.stringValue == provider.issuer)
        #expect(health?["url"]?.stringValue == provider.endpoints.baseURL + "/introspect")
    }

    @Test func aDocumentWithoutTheIntrospectionEndpointIsRefusedWhenTheConfigurationNeedsIt() async throws {
        let provider = try await ScriptedOIDCProvider.start()
        atTestEnd { await provider.stop() }
        provider.update { $0.servesIntrospection = false }
        let gateway = try await Self.gateway(
            provider: provider, waitUntilReady: false, introspection: ["clientId": "gateway", "clientSecret": "s3cret"])
        atTestEnd { await gateway.stop() }
        try await poll { gateway.application.shared.keyStore.unreadyReason?.contains("introspection_endpoint") == true }
        #expect(!gateway.application.isReady)
        let health = try #require(try await Self.issuerHealth(gateway, provider))
        #expect(
            health["discovery"]?["lastError"]?.stringValue == "the discovery document has no introspection_endpoint",
            "\(health)")
        #expect(try await gateway.send(.get("/opaque", token: "opaque-x")).status == 503)
        #expect(provider.introspectionCalls == 0)
    }
}
