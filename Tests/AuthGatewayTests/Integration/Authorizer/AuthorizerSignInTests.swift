import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// Browser sign-in through an authorizer call (docs/authorizer.md): a navigation to a `signIn`
/// route is sent to sign in — `302` for forward auth, `401` with the `Location` for nginx — and a
/// signed-in browser's session cookie is allowed, with the session's access token for the
/// backend. The flow itself runs on the gateway's own sign-in endpoints (`SignInFixture`).
@Suite("Authorizer: browser sign-in through the proxy (real sockets)", .awaitsCleanups)
struct AuthorizerSignInTests {
    static let navigation = [
        ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"), ("Sec-Fetch-Mode", "navigate"),
        ("Sec-Fetch-Site", "none"),
    ]

    @Test func aNavigationIsSentToSignInAndASessionIsAllowed() async throws {
        let fixture = try await SignInFixture.start { config in config["authorizer"] = [:] }
        atTestEnd { await fixture.stop() }
        let gateway = fixture.gateway
        let forward = try await gateway.send(
            TestRequest(
                .GET, AuthorizerHTTPTests.prefix + "forward-auth",
                headers: [("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/reports/q3?tab=2")] + Self.navigation))
        #expect(forward.status == 302)
        let location = try #require(forward.header("Location"))
        // Straight to the provider, the flow in a cookie for the client.
        #expect(location.hasPrefix(fixture.provider.issuer), "\(location)")
        #expect(forward.headers["set-cookie"].contains { $0.hasPrefix("gateway-flow-") })

        let nginx = try await gateway.send(
            TestRequest(
                .GET, AuthorizerHTTPTests.prefix + "auth-request",
                headers: [("X-Original-Method", "GET"), ("X-Original-URI", "/reports/q3?tab=2")] + Self.navigation))
        #expect(nginx.status == 401)
        #expect(nginx.header("Location")?.hasPrefix(fixture.provider.issuer) == true)
        #expect(nginx.headers["set-cookie"].contains { $0.hasPrefix("gateway-flow-") })

        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/reports/q3")
        let allowed = try await gateway.send(
            TestRequest(
                .GET, AuthorizerHTTPTests.prefix + "forward-auth",
                headers: [("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/reports/q3")] + Self.navigation
                    + browser.cookieHeader))
        #expect(allowed.status == 200, "\(allowed.text)")
        #expect(allowed.header("X-User-Email") == "alice@example.com")
        #expect(allowed.header("Authorization")?.hasPrefix("Bearer ") == true)
    }
}
