import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The demo as `swift run auth-gateway demo` runs it (its auth service, echo backend and
/// configuration), driven by the walkthrough's requests on real sockets.
@Suite("Demo walkthrough (real sockets)", .awaitsCleanups, .timeLimit(.minutes(2)))
struct DemoTests {
    @Test func theWalkthroughsBearerAndDPoPStepsWork() async throws {
        let authService = try DemoAuthService(tokenLifetimeSeconds: 60)
        try await authService.start(group: TestGroup.shared)
        // As the demo starts it: checking the gateway's assertions with the demo key.
        let backend = try await EchoBackend.start(group: TestGroup.shared, assertions: DemoAssertionKeys.shared.check)
        atTestEnd {
            await authService.stop(); await backend.close()
        }
        guard
            case .object(let demo) = try JSONValue(
                parsing: DemoRunner.configurationText(gatewayPort: 0, authService: authService, backend: backend))
        else {
            Issue.record("the demo configuration is not a JSON object")
            return
        }
        let gateway = try await GatewayFixture.start(backend: backend) { config in config = demo }
        atTestEnd { await gateway.stop() }

        // Step 1-2: log in, call with the bearer token (identity headers from the profile).
        let plain = try await Self.login(authService, extra: [:])
        let served = try await DPoPTests.send(gateway, "/api/orders", [("Authorization", "Bearer \(plain)")])
        #expect(served.status == 200, "\(served.text)")
        #expect(served.echoedHeader("x-user-name") == ["alice@example.com"])
        // The echo backend shows the assertion the gateway signed, verified with the demo key …
        let shown = try #require(served.json?["assertion"], "\(served.text)")
        #expect(shown["verified"] == true, "\(shown)")
        #expect(shown["claims"]?["iss"]?.stringValue == DemoAssertionKeys.issuer)
        #expect(shown["claims"]?["aud"] == "echo")
        #expect(shown["claims"]?["auth"] == "jwt")
        #expect(shown["claims"]?["email"] == "alice@example.com")
        #expect(shown["header"]?["kid"]?.stringValue == DemoAssertionKeys.kid)
        // … and joserfc verifies it against the JWKS the demo gateway serves.
        let assertion = try IdentityPeers.assertion(served)
        let jwks = try await IdentityPeers.jwks(port: gateway.port)
        let document = try #require(try JSONValue(parsing: jwks)["keys"]?.arrayValue)
        #expect(document.compactMap { $0["kid"]?.stringValue } == [DemoAssertionKeys.kid])
        let python = try ExternalTool.require("python3", package: "python3")
        let check: JSONValue = [
            "jwks": try JSONValue(parsing: jwks), "issuer": .string(DemoAssertionKeys.issuer),
            "now": .number(JSONNumber(Int(Date().timeIntervalSince1970))),
            "checks": [["token": .string(assertion), "audience": "echo", "typ": "JWT"]],
        ]
        let verified = try await ExternalTool.run(
            python, [IdentityPeers.script], input: Data(check.jsonText.utf8))
        #expect(try JSONValue(parsing: verified.stdout).arrayValue?.first?["ok"] == true, "\(verified.stdout)")
        // A tampered assertion is shown as refused.
        let tampered = DemoAssertionKeys.shared.check.verdict(
            String(assertion.dropLast(4)) + "AAAA", now: Date().timeIntervalSince1970)
        #expect(tampered["verified"] == false)

        // Step 9: a token bound to the client's key (made by Python joserfc) needs its proof.
        let key = try await DPoPTests.clientKey()
        let bound = try await Self.login(authService, extra: ["dpop_jkt": .string(key.jkt)])
        let url = "http://127.0.0.1:\(gateway.port)/api/orders"
        let proof = try await DPoPTests.proof(key, url: url, token: bound)
        let withProof = try await DPoPTests.send(
            gateway, "/api/orders", [("Authorization", "DPoP \(bound)"), ("DPoP", proof)])
        #expect(withProof.status == 200, "\(withProof.text)")
        #expect(withProof.echoedHeader("x-user-name") == ["alice@example.com"])
        let asBearer = try await DPoPTests.send(gateway, "/api/orders", [("Authorization", "Bearer \(bound)")])
        #expect(asBearer.status == 401, "a bound token without its proof")
        #expect(backend.requestCount == 2, "the refused request never reached the backend")
    }

    @Test("the printed browser URL sends a navigation to the provider's login form, and signing in lands there")
    func theBrowserWalkthroughsURLWorks() async throws {
        let authService = try DemoAuthService(tokenLifetimeSeconds: 60)
        try await authService.start(group: TestGroup.shared)
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await authService.stop(); await backend.close()
        }
        func demo(_ publicBaseURL: String?) throws -> JSONObject {
            let text = DemoRunner.configurationText(
                gatewayPort: 0, authService: authService, backend: backend, publicBaseURL: publicBaseURL)
            return try #require(try JSONValue(parsing: text).objectValue, "the demo configuration is not an object")
        }
        let initial = try demo(nil)
        let gateway = try await GatewayFixture.start(backend: backend) { config in config = initial }
        atTestEnd { await gateway.stop() }
        // As the demo does on port 0: the real port, in the configuration and at the provider.
        let base = DemoRunner.publicBaseURL(gatewayPort: gateway.port)
        authService.register(DemoRunner.gatewayClient(publicBaseURL: base))
        let reloaded = try demo(base)
        try gateway.reload { config in config = reloaded }

        let printed = DemoRunner.walkthrough(
            gateway: "http://127.0.0.1:\(gateway.port)", publicBaseURL: base, authService: authService.baseURL,
            lifetime: 60)
        let url = try #require(RealBrowserTests.browserURL(in: printed), "\(printed)")
        #expect(url == base + "/app/")
        #expect(printed.contains("alice@example.com / alice-password"))
        #expect(printed.contains(base + "/.gateway/sign-out"))
        let path = String(url.dropFirst(base.count))
        var browser = ScriptedBrowser()
        var start: TestResponse?
        let applied = await eventually {
            var fresh = ScriptedBrowser()
            guard let response = try? await fresh.navigate(gateway, path),
                response.header("location")?.contains(FormEncoding.encode(base + "/.gateway/callback")) == true
            else { return false }
            (browser, start) = (fresh, response)
            return true
        }
        try #require(applied, "the reloaded public base applies")
        let authorize = try #require(start?.header("location"))
        #expect(authorize.hasPrefix(authService.authorizationEndpoint + "?"))
        let callback = try #require(authService.signIn(authorizationURL: authorize, userName: "alice@example.com"))
        let callbackPath = try #require(
            callback.range(of: "/.gateway/callback").map { String(callback[$0.lowerBound...]) })
        let signedIn = try await browser.get(gateway, callbackPath)
        #expect(signedIn.status == 302, "\(signedIn.text)")
        #expect(signedIn.header("location") == path)

        let page = try await browser.navigate(gateway, path)
        #expect(page.status == 200)
        #expect(page.echoedHeader("x-user-email") == ["alice@example.com"])
        #expect(
            page.echoedHeader("x-user-name") == ["alice@example.com"], "the profile, fetched with the session's token")
        #expect(page.echoedHeader("authorization").first?.hasPrefix("Bearer ") == true)

        // Signing out at the printed address (typed: Sec-Fetch-Site none) goes to the provider,
        // which sends the browser back to the app.
        let out = try await browser.navigate(gateway, "/.gateway/sign-out")
        #expect(out.status == 302)
        let endSession = try #require(out.header("location"))
        #expect(endSession.hasPrefix(authService.endSessionEndpoint + "?"))
        let query = Substring(endSession.split(separator: "?")[1])
        #expect(FormDecoding.value("post_logout_redirect_uri", in: query) == base + "/app/")
        #expect(try await browser.navigate(gateway, path).status == 302)
    }

    /// Step 1: POST /v1/login as alice; the access token of the answer.
    static func login(_ authService: DemoAuthService, extra: JSONObject) async throws -> String {
        var body: JSONObject = ["user_name": "alice@example.com", "password": "alice-password"]
        for entry in extra.entries { body[entry.key] = entry.value }
        let port = try #require(URL(string: authService.baseURL)?.port)
        let connection = try await TestConnection.connect(port: port)
        let answer = try await withCleanup({ await connection.close() }) {
            try await connection.send(
                TestRequest(
                    .POST, "/v1/login", headers: [("Content-Type", "application/json")],
                    body: JSONValue.object(body).jsonText))
        }
        return try #require(answer.json?["accesstoken"]?.stringValue, "\(answer.text)")
    }
}

extension DemoTests {
    @Test("the demo's API key passes the demo's policy; a wrong key is 401 apikey.invalid; alice is 403")
    func theDemoAPIKeyWorks() async throws {
        let authService = try DemoAuthService(tokenLifetimeSeconds: 60)
        try await authService.start(group: TestGroup.shared)
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await authService.stop(); await backend.close()
        }
        let text = DemoRunner.configurationText(gatewayPort: 0, authService: authService, backend: backend)
        let demo = try #require(try JSONValue(parsing: text).objectValue)
        let gateway = try await GatewayFixture.start(backend: backend) { config in config = demo }
        atTestEnd { await gateway.stop() }

        let printed = DemoRunner.walkthrough(
            gateway: "http://127.0.0.1:\(gateway.port)", publicBaseURL: "http://localhost:1",
            authService: authService.baseURL, lifetime: 60)
        #expect(printed.contains("X-API-Key: \(DemoRunner.apiKey)"))

        let served = try await gateway.send(
            TestRequest(.GET, "/deploy/run", headers: [("X-API-Key", DemoRunner.apiKey)]))
        #expect(served.status == 200, "\(served.text)")
        #expect(served.echoedHeader("x-user-subject") == ["ci-bot"])
        #expect(served.echoedHeader("x-user-email") == ["ci-bot@example.com"])
        #expect(served.echoedHeader("x-api-key").isEmpty)
        let wrong = try await gateway.send(TestRequest(.GET, "/deploy/run", headers: [("X-API-Key", "agk_wrong")]))
        #expect(wrong.status == 401)
        #expect(wrong.json?["type"]?.stringValue == "urn:auth-gateway:problem:apikey.invalid")
        let alice = try await Self.login(authService, extra: [:])
        let refused = try await DPoPTests.send(gateway, "/deploy/run", [("Authorization", "Bearer \(alice)")])
        #expect(refused.status == 403, "alice has neither the deploy scope nor super_admin")
        #expect(refused.json?["detail"]?.stringValue?.hasSuffix("routes[3].require.anyOf") == true, "\(refused.text)")
        #expect(backend.requestCount == 1)
    }
}
