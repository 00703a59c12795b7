import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// Attacks on browser sessions (docs/browser-sign-in.md): session fixation, the attributes of
/// every cookie the gateway sets, and a provider whose token endpoint refuses, is slow, is down
/// or answers garbage at the callback.
@Suite("Session attacks (real sockets)", .serialized, .awaitsCleanups, .timeLimit(.minutes(4)))
struct SessionAttackTests {
    static let json = [("Accept", "application/json")]

    // MARK: Fixation

    @Test("signing in again replaces the session handle, and the old handle is dead")
    func signingInAgainReplacesTheHandle() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let first = try #require(browser.cookies["gateway-session"])
        let before = browser
        #expect(try await browser.get(fixture.gateway, "/api/x", headers: Self.json).status == 200)

        // The same browser signs in again with the "Sign in" link (its session cookie goes along
        // to the callback).
        let start = try await browser.get(fixture.gateway, "/.gateway/sign-in?rd=/reports")
        #expect(start.status == 302)
        let authorize = try #require(start.header("location"))
        let callback = try #require(fixture.provider.signIn(authorizationURL: authorize, userName: "alice@example.com"))
        let path = try #require(callback.range(of: "/.gateway/callback").map { String(callback[$0.lowerBound...]) })
        #expect(browser.cookies["gateway-session"] == first, "the callback carries the old session cookie")
        let landed = try await browser.get(fixture.gateway, path)
        #expect(landed.status == 302)
        #expect(landed.header("location") == "/reports")
        let second = try #require(browser.cookies["gateway-session"])
        #expect(second != first, "a sign-in must issue a new handle")
        #expect(try await browser.get(fixture.gateway, "/api/x", headers: Self.json).status == 200)
        #expect(fixture.gateway.application.shared.authentication.sessions.count == 1, "the old session ended")

        // The old cookie is no session at all: 401 for an API call, sign in for a navigation.
        var old = before
        let refused = try await old.get(fixture.gateway, "/api/x", headers: Self.json)
        #expect(refused.status == 401)
        #expect(refused.echoedHeader("authorization").isEmpty)
        var oldNavigation = before
        let navigation = try await oldNavigation.navigate(fixture.gateway, "/")
        #expect(navigation.status == 302)
        #expect(navigation.header("location")?.hasPrefix(fixture.provider.authorizationEndpoint) == true)
        #expect(fixture.gateway.backend.requestCount == 2, "only the two live-session calls were forwarded")
    }

    // MARK: Cookie attributes

    /// Every `Set-Cookie` of `responses`: `HttpOnly`, `SameSite=Lax`, `Path=/`, no `Domain`,
    /// and the `__Host-` prefix with `Secure` exactly when the public base is https.
    static func expectAttributes(_ responses: [(String, TestResponse)], secure: Bool) -> Int {
        var count = 0
        for (step, response) in responses {
            for value in response.headers["set-cookie"] {
                count += 1
                let parts = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                let name = String(parts[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0])
                let attributes = parts.dropFirst().map { $0.lowercased() }
                #expect(name.hasPrefix("__Host-") == secure, "\(step): \(name)")
                #expect(name.hasPrefix("__Host-gateway-") || name.hasPrefix("gateway-"), "\(step): \(name)")
                #expect(attributes.contains("secure") == secure, "\(step): \(name) Secure")
                #expect(attributes.contains("httponly"), "\(step): \(name) HttpOnly")
                #expect(attributes.contains("samesite=lax"), "\(step): \(name) SameSite")
                #expect(attributes.filter { $0.hasPrefix("path=") } == ["path=/"], "\(step): \(name) Path")
                #expect(!attributes.contains { $0.hasPrefix("domain") }, "\(step): \(name) Domain")
                #expect(attributes.filter { $0.hasPrefix("max-age=") }.count == 1, "\(step): \(name) Max-Age")
            }
        }
        return count
    }

    /// Every path that sets or clears a cookie: a navigation sent to sign in, the sign-in
    /// endpoint, a sixth flow (the oldest cleared), the callback (session set, flow cleared), a
    /// refused callback (flow cleared), sign-out (session cleared), and a dead session's 401
    /// (cleared).
    static func everyCookiePath(_ fixture: SignInFixture) async throws -> [(String, TestResponse)] {
        var responses: [(String, TestResponse)] = []
        var browser = ScriptedBrowser()
        responses.append(("navigation", try await browser.navigate(fixture.gateway, "/app")))
        for index in 0..<5 {
            responses.append(("sign-in \(index)", try await browser.get(fixture.gateway, "/.gateway/sign-in?rd=/x")))
        }
        #expect(responses.last?.1.headers["set-cookie"].contains { $0.contains("Max-Age=0") } == true)
        var signedIn = ScriptedBrowser()
        responses.append(("callback", try await fixture.signIn(&signedIn, to: "/")))
        var denied = ScriptedBrowser()
        let navigation = try await denied.navigate(fixture.gateway, "/")
        let state = try #require(
            navigation.header("location").flatMap { FormDecoding.value("state", in: Substring($0)) })
        responses.append(
            (
                "denied callback",
                try await denied.get(fixture.gateway, "/.gateway/callback?error=access_denied&state=\(state)")
            ))
        let stale = signedIn
        responses.append(
            (
                "sign-out",
                try await signedIn.send(
                    fixture.gateway,
                    TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
            ))
        var dead = stale
        let refused = try await dead.get(fixture.gateway, "/api/x", headers: Self.json)
        #expect(refused.status == 401)
        responses.append(("dead session", refused))
        return responses
    }

    @Test("every cookie over an https public base: __Host-, Secure, HttpOnly, SameSite=Lax, Path=/, no Domain")
    func cookieAttributesOverHTTPS() async throws {
        let fixture = try await SignInFixture.start(scheme: "https")
        atTestEnd { await fixture.stop() }
        let responses = try await Self.everyCookiePath(fixture)
        let count = Self.expectAttributes(responses, secure: true)
        #expect(count >= 12, "\(count) cookies set")
        for (step, response) in responses {
            #expect(!response.headers["set-cookie"].contains { $0.hasPrefix("gateway-") }, "\(step)")
        }
    }

    @Test("every cookie over an http loopback public base: no __Host- and no Secure, the rest the same")
    func cookieAttributesOverLoopbackHTTP() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        let responses = try await Self.everyCookiePath(fixture)
        let count = Self.expectAttributes(responses, secure: false)
        #expect(count >= 12, "\(count) cookies set")
    }

    /// Transparent refresh's cookies (docs/authentication.md, "Transparent refresh"): their names
    /// are the configured token cookies (so no `__Host-` prefix of the gateway's choosing), each
    /// set or cleared `HttpOnly`, `SameSite=Lax`, `Path=/`, without `Domain`, and `Secure` only
    /// over TLS (this listener is plain HTTP).
    @Test("transparent refresh's cookies, set and cleared: HttpOnly, SameSite=Lax, Path=/, no Domain")
    func refreshCookieAttributes() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let gateway = try await RefreshTests.gateway(authService: rainmaker.service.baseURL)
        atTestEnd { await gateway.stop() }
        let expired = TestKeys.token(subject: "alice", expiresIn: -60)
        func send() async throws -> TestResponse {
            try await gateway.send(
                TestRequest(
                    .GET, "/refresh",
                    headers: [("Cookie", "access_token=\(expired); refresh_token=\(rainmaker.issueRefreshToken())")]))
        }
        let refreshed = try await send()
        #expect(refreshed.status == 200)
        rainmaker.set(.status(401))
        let refused = try await send()
        #expect(refused.status == 401)
        var count = 0
        for (step, response) in [("refreshed", refreshed), ("refused", refused)] {
            for value in response.headers["set-cookie"] {
                count += 1
                let parts = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                let attributes = parts.dropFirst().map { $0.lowercased() }
                #expect(parts[0].hasPrefix("access_token=") || parts[0].hasPrefix("refresh_token="), "\(step)")
                #expect(attributes.contains("httponly"), "\(step): \(parts[0].prefix(14))")
                #expect(attributes.contains("samesite=lax"), "\(step)")
                #expect(attributes.filter { $0.hasPrefix("path=") } == ["path=/"], "\(step)")
                #expect(!attributes.contains { $0.hasPrefix("domain") }, "\(step)")
                #expect(!attributes.contains("secure"), "\(step): Secure over plain HTTP")
            }
        }
        #expect(refreshed.headers["set-cookie"].count == 2)
        #expect(refused.headers["set-cookie"].allSatisfy { $0.contains("Max-Age=0") })
        #expect(count >= 3, "\(count) cookies")
    }

    // MARK: The code exchange

    /// A browser at the callback: the provider has issued a code for its flow; the callback's
    /// path, not yet sent.
    static func atCallback(_ fixture: SignInFixture) async throws -> (ScriptedBrowser, String) {
        var browser = ScriptedBrowser()
        let navigation = try await browser.navigate(fixture.gateway, "/reports")
        let authorize = try #require(navigation.header("location"))
        let callback = try #require(fixture.provider.signIn(authorizationURL: authorize, userName: "alice@example.com"))
        let path = try #require(callback.range(of: "/.gateway/callback").map { String(callback[$0.lowerBound...]) })
        return (browser, path)
    }

    /// The callback's answer is `status` with problem `type`, no session exists, the browser
    /// holds no session cookie and its flow cookie is cleared.
    static func expectNoSession(
        _ response: TestResponse, _ browser: ScriptedBrowser, _ fixture: SignInFixture, status: Int, type: String,
        _ name: String
    ) {
        #expect(response.status == status, "\(name): \(response.status) \(response.text)")
        #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:\(type)", "\(name): \(response.text)")
        #expect(browser.cookies["gateway-session"] == nil, "\(name)")
        #expect(!browser.cookies.keys.contains { $0.hasPrefix("gateway-flow-") }, "\(name): the flow cookie stays")
        #expect(fixture.gateway.application.shared.authentication.sessions.count == 0, "\(name): a session was made")
        // Nothing the provider sent is reflected.
        #expect(!response.text.contains("secret-marker"), "\(name)")
    }

    @Test("the token endpoint refusing or answering garbage: 400 signin.code_rejected, 5xx: 503; no session")
    func refusedAndGarbageAnswers() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        typealias Failure = DemoAuthService.TokenEndpointFailure
        let cases: [(String, Failure, Int, String)] = [
            ("invalid_grant", .error("invalid_grant"), 400, "signin.code_rejected"),
            ("invalid_client 401", .error("invalid_client", status: 401), 400, "signin.code_rejected"),
            ("500", .status(500), 503, "auth_service.unavailable"),
            ("503", .status(503), 503, "auth_service.unavailable"),
            ("429", .status(429), 503, "auth_service.unavailable"),
            ("not JSON", .body("<html>secret-marker</html>", contentType: "text/html"), 400, "signin.code_rejected"),
            ("truncated JSON", .body(#"{"id_token": "secret-marker"#), 400, "signin.code_rejected"),
            ("empty body", .body(""), 400, "signin.code_rejected"),
            ("an array", .body(#"["secret-marker"]"#), 400, "signin.code_rejected"),
            (
                "no id_token", .body(#"{"access_token": "secret-marker", "token_type": "Bearer"}"#), 400,
                "signin.code_rejected"
            ),
            (
                "no access_token", .body(#"{"id_token": "secret-marker", "token_type": "Bearer"}"#), 400,
                "signin.code_rejected"
            ),
            (
                "id_token a number", .body(#"{"id_token": 7, "access_token": "secret-marker"}"#), 400,
                "signin.code_rejected"
            ),
            (
                "access_token an object", .body(#"{"id_token": "a.b.c", "access_token": {"v": "secret-marker"}}"#), 400,
                "signin.code_rejected"
            ),
            (
                "id_token not a JWT", .body(#"{"id_token": "secret-marker", "access_token": "secret-marker"}"#), 400,
                "signin.invalid_id_token"
            ),
        ]
        for (name, failure, status, type) in cases {
            var (browser, callback) = try await Self.atCallback(fixture)
            fixture.provider.failTokenEndpoint(failure, times: 1)
            let calls = fixture.provider.tokenCalls.authorizationCode
            let response = try await browser.get(fixture.gateway, callback)
            #expect(fixture.provider.tokenCalls.authorizationCode == calls + 1, "\(name): one exchange")
            Self.expectNoSession(response, browser, fixture, status: status, type: type, name)
        }
        #expect(fixture.gateway.backend.requestCount == 0)
        let metrics = try await fixture.metrics()
        #expect(metrics.contains(#"auth_gateway_sign_ins_total{outcome="code_rejected"} 10"#), "\(metrics)")
        #expect(metrics.contains(#"auth_gateway_sign_ins_total{outcome="unavailable"} 3"#))
        #expect(!metrics.contains(#"outcome="success""#))
    }

    @Test("the token endpoint too slow: 503 when the call times out, no session; down: 503, no session")
    func slowAndDownTokenEndpoint() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        // Every client is served (discovery, keys) before the deadline is made short.
        var (browser, callback) = try await Self.atCallback(fixture)
        let base = fixture.publicBaseURL
        try fixture.gateway.reload { document in
            document.set("browserSignIn.publicBaseURL", .string(base))
            document.set("authService.timeoutMilliseconds", 500)
            guard case .array(let routes)? = document["routes"] else { return }
            let probe: JSONValue = ["name": "probe", "pathPrefix": "/probe/", "backend": "api", "auth": "none"]
            document["routes"] = .array([probe] + routes)
        }
        // One event loop: once a new connection sees the probe route, the callback sees 500 ms.
        #expect(await eventually { (try? await fixture.gateway.send(.get("/probe/x")).status) == 200 })
        fixture.provider.failTokenEndpoint(.hold)
        atTestEnd { fixture.provider.releaseHeldTokenCalls() }
        let slow = try await browser.get(fixture.gateway, callback)
        // (On a loaded machine the deadline may pass before the call reaches the provider.)
        #expect(fixture.provider.heldTokenCallCount <= 1)
        Self.expectNoSession(slow, browser, fixture, status: 503, type: "auth_service.unavailable", "slow")
        fixture.provider.failTokenEndpoint(nil)
        fixture.provider.releaseHeldTokenCalls()

        // Down: the provider's connection closes without an answer.
        var (downBrowser, downCallback) = try await Self.atCallback(fixture)
        fixture.provider.failTokenEndpoint(.hangUp, times: 1)
        let down = try await downBrowser.get(fixture.gateway, downCallback)
        Self.expectNoSession(down, downBrowser, fixture, status: 503, type: "auth_service.unavailable", "down")
        #expect(fixture.gateway.backend.requestCount == 1, "only the probe")
    }
}
