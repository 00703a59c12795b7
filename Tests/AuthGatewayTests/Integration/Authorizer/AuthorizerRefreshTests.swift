import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A refresh during an authorizer call (docs/authorizer.md, "Answers"): the allow answer hands
/// the new token to the proxy for the backend (`Authorization`) and for the client (the
/// `responseHeaders` names, or `Set-Cookie` for a cookie session — `Secure` when the original
/// request was https, as the contract said), exactly as a proxied request would get them.
@Suite("Authorizer: refresh during a decision (real sockets)", .awaitsCleanups)
struct AuthorizerRefreshTests {
    @Test func theRefreshedTokenGoesBackThroughTheProxy() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let gateway = try await GatewayFixture.start { config in
            config["authorizer"] = [:]
            config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
            config["authService"] = [
                "url": .string(rainmaker.service.baseURL), "refresh": ["maxExpiredSeconds": 3600],
            ]
        }
        atTestEnd { await gateway.stop() }
        let expired = TestKeys.token(subject: "alice", expiresIn: -60)
        let refreshToken = rainmaker.issueRefreshToken()
        let response = try await gateway.send(
            TestRequest(
                .GET, AuthorizerHTTPTests.prefix + "forward-auth",
                headers: [
                    ("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/orders"), ("X-Forwarded-Proto", "https"),
                    ("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", refreshToken),
                ]))
        #expect(response.status == 200)
        #expect(response.header("X-User-Subject") == "alice")
        let newToken = try #require(response.header("X-Access-Token"))
        #expect(response.header("Authorization") == "Bearer \(newToken)")
        let rotated = try #require(response.header("X-Refresh-Token"))
        #expect(rotated != refreshToken)
        #expect(rainmaker.refreshCalls == 1)

        // A cookie session: the new cookies, Secure because the original request was https.
        let cookieResponse = try await gateway.send(
            TestRequest(
                .GET, AuthorizerHTTPTests.prefix + "auth-request",
                headers: [
                    ("X-Original-Method", "GET"), ("X-Original-URI", "/orders"), ("X-Forwarded-Proto", "https"),
                    (
                        "Cookie",
                        "access_token=\(TestKeys.token(subject: "carol", expiresIn: -60)); refresh_token=\(rainmaker.issueRefreshToken())"
                    ),
                ]))
        #expect(cookieResponse.status == 200)
        let cookies = cookieResponse.headers["set-cookie"]
        #expect(cookies.count == 2)
        #expect(cookies.allSatisfy { $0.contains("; Secure") })
        #expect(gateway.backend.requestCount == 0)
    }
}
