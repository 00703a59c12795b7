import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A real nginx (`auth_request`) and a real Caddy (`forward_auth`) in front of the gateway,
/// each configured with the snippet of docs/authorizer.md (`FrontProxy`): the application
/// behind them (an echo backend) sees the identity the gateway decided, and refusals reach the
/// client as the doc says. Fails (never skips) when nginx or caddy is not installed.
@Suite("Authorizer: real nginx and Caddy in front", .awaitsCleanups, .timeLimit(.minutes(3)))
struct FrontProxyTests {
    static func setUp(_ kind: FrontProxy.Kind) async throws -> (GatewayFixture, FrontProxy) {
        let gateway = try await AuthorizerHTTPTests.start()
        let proxy = try await FrontProxy.start(kind, gatewayPort: gateway.port, backendPort: gateway.backend.port)
        return (gateway, proxy)
    }

    @Test func nginxAuthRequest() async throws {
        let (gateway, nginx) = try await Self.setUp(.nginx)
        atTestEnd { await gateway.stop() }
        atTestEnd { await nginx.stop() }
        let allowed = try await nginx.send(
            .get("/api/orders?id=7", token: TestKeys.token(), headers: [("X-User-Subject", "forged")]))
        #expect(allowed.status == 200, "nginx: \(nginx.log)")
        #expect(allowed.echoedHeader("x-user-subject") == ["user-42"])
        #expect(allowed.echoedHeader("x-user-email") == ["user-42@example.com"])

        let missing = try await nginx.send(.get("/api/orders"))
        #expect(missing.status == 401)
        let forbidden = try await nginx.send(.get("/admin/x", token: TestKeys.token()))
        #expect(forbidden.status == 403)
        #expect(gateway.backend.requestCount == 1)
    }

    /// A browser navigation to a sign-in route through nginx: the snippet's `@unauthorized`
    /// turns the gateway's 401 + Location into the redirect, with the sign-in flow's cookie.
    @Test func nginxSendsBrowsersToSignIn() async throws {
        let fixture = try await SignInFixture.start { config in config["authorizer"] = [:] }
        atTestEnd { await fixture.stop() }
        let nginx = try await FrontProxy.start(
            .nginx, gatewayPort: fixture.gateway.port, backendPort: fixture.gateway.backend.port)
        atTestEnd { await nginx.stop() }
        let response = try await nginx.send(
            TestRequest(.GET, "/reports/q3?tab=2", headers: AuthorizerSignInTests.navigation))
        #expect(response.status == 302, "nginx: \(nginx.log)")
        #expect(response.header("Location")?.hasPrefix(fixture.provider.issuer) == true)
        #expect(response.headers["set-cookie"].contains { $0.hasPrefix("gateway-flow-") })
        #expect(fixture.gateway.backend.requestCount == 0)
    }

    @Test func caddyForwardAuth() async throws {
        let (gateway, caddy) = try await Self.setUp(.caddy)
        atTestEnd { await gateway.stop() }
        atTestEnd { await caddy.stop() }
        let allowed = try await caddy.send(.get("/api/orders?id=7", token: TestKeys.token()))
        #expect(allowed.status == 200, "caddy: \(caddy.log)")
        #expect(allowed.echoedHeader("x-user-subject") == ["user-42"])

        // The gateway's refusal reaches the client verbatim: status, challenge, problem body.
        let missing = try await caddy.send(.get("/api/orders"))
        #expect(missing.status == 401)
        #expect(missing.header("WWW-Authenticate") == "Bearer realm=\"auth-gateway\"")
        #expect(missing.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.missing")
        let forbidden = try await caddy.send(.get("/admin/x", token: TestKeys.token()))
        #expect(forbidden.status == 403)
        #expect(gateway.backend.requestCount == 1)
    }
}
