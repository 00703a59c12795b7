import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// Browser sign-in over real sockets, with the demo's OpenID Provider and a scripted browser
/// (docs/browser-sign-in.md).
@Suite("Browser sign-in (real sockets)", .awaitsCleanups)
struct BrowserSignInTests {
    @Test("a navigation signs in through the provider, lands where it asked, and the backend sees a bearer token")
    func signInAndUse() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        let callback = try await fixture.signIn(&browser, to: "/reports/q3?tab=2")
        #expect(callback.status == 302)
        #expect(callback.header("location") == "/reports/q3?tab=2")
        let session = try #require(browser.cookies["gateway-session"])
        #expect(session.utf8.count == 43)
        #expect(browser.cookies.keys.allSatisfy { !$0.hasPrefix("gateway-flow-") }, "the flow cookie is cleared")
        let cookie = try #require(callback.headers["set-cookie"].first { $0.hasPrefix("gateway-session=") })
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/"))
        #expect(!cookie.contains("Domain"))

        let page = try await browser.navigate(fixture.gateway, "/reports/q3?tab=2")
        #expect(page.status == 200)
        let issued = try #require(fixture.provider.lastIssuedTokens)
        #expect(page.echoedHeader("authorization") == ["Bearer \(issued.accessToken)"])
        #expect(page.echoedHeader("x-user-email") == ["alice@example.com"])
        #expect(
            page.echoedHeader("cookie").allSatisfy { !$0.contains("gateway-session") && !$0.contains("gateway-flow") })
        // A fetch from the signed-in page reaches an API route with the same session.
        let api = try await browser.get(fixture.gateway, "/api/orders", headers: [("Accept", "application/json")])
        #expect(api.status == 200)
        #expect(api.echoedHeader("x-user-subject") == ["u-1001"])
    }

    @Test("only browser navigations are redirected; API calls, fetch and JSON clients get 401")
    func whoIsRedirected() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        let html = "text/html,*/*;q=0.8"
        let cases: [(TestRequest, Int)] = [
            (TestRequest(.GET, "/page", headers: [("Accept", html)]), 302),
            (TestRequest(.HEAD, "/page", headers: [("Accept", html), ("Sec-Fetch-Mode", "navigate")]), 302),
            (TestRequest(.GET, "/page", headers: [("Accept", "application/json")]), 401),
            (TestRequest(.GET, "/page", headers: [("Accept", html), ("Sec-Fetch-Mode", "cors")]), 401),
            (TestRequest(.POST, "/page", headers: [("Accept", html)], body: "x"), 401),
            (TestRequest(.GET, "/page", headers: [("Accept", html), ("Authorization", "Basic eDp5")]), 401),
            (TestRequest(.GET, "/api/x", headers: [("Accept", html)]), 401),
        ]
        for (request, status) in cases {
            let response = try await fixture.gateway.send(request)
            #expect(response.status == status, "\(request.method) \(request.uri) \(request.headers)")
            if status == 302 {
                #expect(
                    response.headers["set-cookie"].contains {
                        $0.hasPrefix("gateway-flow-") && $0.contains("Max-Age=600")
                    })
            } else {
                #expect(response.header("www-authenticate") != nil)
            }
        }
        // A bearer token still works on a signIn route, and wins over a session cookie.
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let token = try #require(fixture.provider.lastIssuedTokens?.accessToken)
        let bearer = try await browser.get(fixture.gateway, "/", headers: [("Authorization", "Bearer \(token)")])
        #expect(bearer.status == 200)
    }

    @Test("several tabs sign in at once; every flow succeeds, at most five flow cookies are kept")
    func parallelTabs() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        var authorizations: [String] = []
        for tab in 0..<3 {
            let start = try await browser.navigate(fixture.gateway, "/tab/\(tab)")
            authorizations.append(try #require(start.header("location")))
        }
        #expect(browser.cookies.keys.filter { $0.hasPrefix("gateway-flow-") }.count == 3)
        // Finished in another order than started.
        for tab in [2, 0, 1] {
            let callback = try #require(
                fixture.provider.signIn(authorizationURL: authorizations[tab], userName: "alice@example.com"))
            let path = String(callback[try #require(callback.range(of: "/.gateway/"))!.lowerBound...])
            let landed = try await browser.get(fixture.gateway, path)
            #expect(landed.status == 302, "\(landed.text)")
            #expect(landed.header("location") == "/tab/\(tab)")
        }
        // Signed in now; a browser that keeps starting sign-ins holds at most five flows.
        #expect(try await browser.navigate(fixture.gateway, "/again").status == 200)
        var restless = ScriptedBrowser()
        for _ in 0..<7 { #expect(try await restless.navigate(fixture.gateway, "/again").status == 302) }
        #expect(restless.cookies.keys.filter { $0.hasPrefix("gateway-flow-") }.count == 5)
    }

    @Test("tampered, unknown, replayed and expired state is 400 and makes no session")
    func badState() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        let start = try await browser.navigate(fixture.gateway, "/")
        let authorize = try #require(start.header("location"))
        let callback = try #require(fixture.provider.signIn(authorizationURL: authorize, userName: "alice@example.com"))
        let path = String(callback[callback.range(of: "/.gateway/")!.lowerBound...])
        let state = try #require(FormDecoding.value("state", in: Substring(path.split(separator: "?")[1])))

        // Without the flow cookie (another browser), with a state of another shape, with a
        // tampered cookie: 400 signin.invalid_state.
        var stranger = ScriptedBrowser()
        #expect(try await stranger.get(fixture.gateway, path).status == 400)
        #expect(try await browser.get(fixture.gateway, "/.gateway/callback?code=x&state=nope").status == 400)
        var tampered = browser
        let name = "gateway-flow-\(state)"
        tampered.cookies[name] = String(tampered.cookies[name]!.reversed())
        let refused = try await tampered.get(fixture.gateway, path, headers: [("Accept", "application/json")])
        #expect(refused.status == 400)
        #expect(refused.json?["type"] == "urn:auth-gateway:problem:signin.invalid_state")
        #expect(tampered.cookies["gateway-session"] == nil)

        // The real one works once; replayed (same cookie, same code) it is refused.
        let replay = browser
        #expect(try await browser.get(fixture.gateway, path).status == 302)
        var again = replay
        #expect(try await again.get(fixture.gateway, path).status == 400)
        #expect(again.cookies["gateway-session"] == nil)

        // Expired: the gateway's clock moves past the flow's 600 s.
        var late = ScriptedBrowser()
        let lateStart = try await late.navigate(fixture.gateway, "/")
        let lateCallback = try #require(
            fixture.provider.signIn(authorizationURL: lateStart.header("location")!, userName: "alice@example.com"))
        fixture.gateway.clock.advance(by: 601)
        let expired = try await late.get(
            fixture.gateway, String(lateCallback[lateCallback.range(of: "/.gateway/")!.lowerBound...]))
        #expect(expired.status == 400)
    }

    @Test("a provider error is 403 signin.denied with only its code, escaped in the HTML page")
    func providerError() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        let start = try await browser.navigate(fixture.gateway, "/")
        let state = try #require(
            FormDecoding.value("state", in: Substring(start.header("location")!.split(separator: "?")[1])))
        let denied = try await browser.get(
            fixture.gateway, "/.gateway/callback?error=access_denied&error_description=%3Cscript%3E&state=\(state)",
            headers: [("Accept", "application/json")])
        #expect(denied.status == 403)
        #expect(denied.json?["type"] == "urn:auth-gateway:problem:signin.denied")
        #expect(denied.json?["detail"]?.stringValue?.contains("access_denied") == true)
        #expect(!denied.text.contains("script"))

        let start2 = try await browser.navigate(fixture.gateway, "/")
        let state2 = try #require(
            FormDecoding.value("state", in: Substring(start2.header("location")!.split(separator: "?")[1])))
        let hostile = try await browser.get(
            fixture.gateway, "/.gateway/callback?error=%3Cimg%20src%3Dx%3E&state=\(state2)",
            headers: [("Accept", "text/html")])
        #expect(hostile.status == 403)
        #expect(hostile.header("content-type")?.hasPrefix("text/html") == true)
        #expect(!hostile.text.contains("<img"))
        #expect(hostile.text.contains("(unknown)"))
    }

    @Test("wrong nonce or audience, or a bad ID-token signature: no session")
    func badIDTokens() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        for tampering in [
            DemoAuthService.IDTokenTampering.wrongNonce, .wrongAudience, .badSignature, .missingNonce, .expired,
        ] {
            var browser = ScriptedBrowser()
            fixture.provider.tamperNextIDToken(tampering)
            let callback = try await fixture.signIn(&browser, to: "/", expecting: 400)
            #expect(callback.text.contains("signin.invalid_id_token"))
            #expect(browser.cookies["gateway-session"] == nil)
        }
    }

    @Test("hostile return paths become /")
    func returnPaths() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        for rd in ["//evil.example", "https://evil.example", "/%5Cevil.example", "%2F%2Fevil.example", "/%2F%2Fevil"] {
            var browser = ScriptedBrowser()
            let start = try await browser.get(fixture.gateway, "/.gateway/sign-in?rd=\(FormEncoding.encode(rd))")
            #expect(start.status == 302)
            let callback = try #require(
                fixture.provider.signIn(authorizationURL: start.header("location")!, userName: "alice@example.com"))
            let landed = try await browser.get(
                fixture.gateway, String(callback[callback.range(of: "/.gateway/")!.lowerBound...]))
            #expect(landed.header("location") == "/", "rd \(rd)")
        }
    }

    @Test("unsafe session requests need the site's own origin (CSRF); bearer requests do not")
    func csrf() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let crossSite = try await browser.send(
            fixture.gateway, TestRequest(.POST, "/api/orders", headers: [("Sec-Fetch-Site", "cross-site")], body: "{}"))
        #expect(crossSite.status == 403)
        #expect(crossSite.json?["type"] == "urn:auth-gateway:problem:signin.csrf")
        let noHeaders = try await browser.send(fixture.gateway, TestRequest(.DELETE, "/api/orders/1"))
        #expect(noHeaders.status == 403)
        let sameOrigin = try await browser.send(
            fixture.gateway, TestRequest(.POST, "/api/orders", headers: [("Sec-Fetch-Site", "same-origin")], body: "{}")
        )
        #expect(sameOrigin.status == 200)
        let origin = try await browser.send(
            fixture.gateway,
            TestRequest(.PUT, "/api/orders/1", headers: [("Origin", fixture.publicBaseURL)], body: "{}"))
        #expect(origin.status == 200)
        let token = try #require(fixture.provider.lastIssuedTokens?.accessToken)
        let bearer = try await fixture.gateway.send(
            TestRequest(.POST, "/api/orders", headers: [("Authorization", "Bearer \(token)")], body: "{}"))
        #expect(bearer.status == 200)
    }

    @Test("sign-out ends the session and goes to the provider's end-session endpoint with id_token_hint")
    func signOut() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let idToken = try #require(fixture.provider.lastIssuedTokens?.idToken)
        let old = browser
        let crossSite = try await browser.send(
            fixture.gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "cross-site")]))
        #expect(crossSite.status == 403)
        let out = try await browser.send(
            fixture.gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
        #expect(out.status == 302)
        let location = try #require(out.header("location"))
        #expect(location.hasPrefix(fixture.provider.endSessionEndpoint + "?"))
        let query = Substring(location.split(separator: "?")[1])
        #expect(FormDecoding.value("id_token_hint", in: query) == idToken)
        #expect(FormDecoding.value("client_id", in: query) == "gateway")
        #expect(FormDecoding.value("post_logout_redirect_uri", in: query) == fixture.publicBaseURL + "/")
        #expect(browser.cookies["gateway-session"] == nil)
        // The old cookie no longer works: a navigation signs in again, an API call gets 401.
        var stale = old
        #expect(try await stale.navigate(fixture.gateway, "/").status == 302)
        var staleAPI = old
        let api = try await staleAPI.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
        #expect(api.status == 401)
        #expect(api.headers["set-cookie"].contains { $0.hasPrefix("gateway-session=;") })
        // On an optional route a stale cookie is simply anonymous.
        var optional = old
        #expect(
            try await optional.get(fixture.gateway, "/open/x", headers: [("Accept", "application/json")]).status == 200)
    }

    @Test("an expired access token is refreshed once with the session's refresh token; the cookie stays the same")
    func sessionRefresh() async throws {
        let fixture = try await SignInFixture.start(tokenLifetimeSeconds: 60)
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let first = try #require(fixture.provider.lastIssuedTokens?.accessToken)
        let cookie = browser.cookies["gateway-session"]
        // Time (the gateway's and the provider's) moves past the token's 60 s.
        fixture.gateway.clock.advance(by: 61)
        let calls = fixture.provider.tokenCalls.refreshToken
        let responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
            for _ in 0..<4 {
                let tab = browser
                group.addTask {
                    var tab = tab
                    return try await tab.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.map(\.status) == [200, 200, 200, 200], "\(responses.map(\.text))")
        #expect(fixture.provider.tokenCalls.refreshToken == calls + 1, "one refresh however many requests wait")
        let refreshed = try #require(fixture.provider.lastIssuedTokens?.accessToken)
        #expect(refreshed != first)
        #expect(responses.allSatisfy { $0.echoedHeader("authorization") == ["Bearer \(refreshed)"] })
        #expect(responses.allSatisfy { $0.headers["set-cookie"].isEmpty }, "the cookie stays the same")
        #expect(browser.cookies["gateway-session"] == cookie)
    }

    @Test("a refused session refresh ends the session: 401 clearing the cookie, or sign-in for a navigation")
    func refusedSessionRefresh() async throws {
        let fixture = try await SignInFixture.start(tokenLifetimeSeconds: 60)
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        fixture.gateway.clock.advance(by: 61)
        fixture.provider.failTokenEndpoint(.error("invalid_grant", status: 400))
        var api = browser
        let refused = try await api.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
        #expect(refused.status == 401)
        #expect(refused.json?["type"] == "urn:auth-gateway:problem:token.refresh_rejected")
        #expect(api.cookies["gateway-session"] == nil)
        fixture.provider.failTokenEndpoint(nil)
        // The session is over everywhere: the same cookie now navigates to sign-in.
        #expect(try await browser.navigate(fixture.gateway, "/").status == 302)
    }
}
