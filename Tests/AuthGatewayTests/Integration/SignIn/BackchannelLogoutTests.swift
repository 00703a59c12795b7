import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// Back-channel logout (OpenID Connect Back-Channel Logout 1.0) from the demo provider, over
/// real sockets (docs/browser-sign-in.md).
@Suite("Back-channel logout (real sockets)", .awaitsCleanups)
struct BackchannelLogoutTests {
    @Test("the provider ending a session ends the gateway's session: 200, and the cookie no longer works")
    func providerLogout() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var alice = ScriptedBrowser()
        _ = try await fixture.signIn(&alice, to: "/")
        var bob = ScriptedBrowser()
        _ = try await fixture.signIn(&bob, to: "/", as: "admin@example.com")
        let aliceSID = try #require(fixture.provider.providerSessions.first { $0.sub == "u-1001" }?.sid)

        let deliveries = await fixture.provider.endSessions(sid: aliceSID)
        #expect(deliveries.count == 1)
        #expect(deliveries.map(\.status) == [200])
        var check = alice
        let refused = try await check.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
        #expect(refused.status == 401)
        // Another user's session goes on.
        #expect(try await bob.get(fixture.gateway, "/api/x").status == 200)
        let metrics = try await fixture.metrics()
        #expect(metrics.contains(#"auth_gateway_sign_outs_total{kind="backchannel"} 1"#))
    }

    @Test("a token naming only the subject ends every session of that subject")
    func bySubject() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var first = ScriptedBrowser()
        _ = try await fixture.signIn(&first, to: "/")
        fixture.provider.skipsLoginFormWhenSignedIn = false
        var second = ScriptedBrowser()
        _ = try await fixture.signIn(&second, to: "/")
        let token = try fixture.provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: "u-1001")
        let uri =
            fixture.publicBaseURL.replacingOccurrences(of: "localhost", with: "127.0.0.1")
            + "/.gateway/backchannel-logout"
        let delivery = await fixture.provider.deliverLogoutToken(token, to: uri)
        #expect(delivery.status == 200)
        #expect(try await first.get(fixture.gateway, "/api/x").status == 401)
        #expect(try await second.get(fixture.gateway, "/api/x").status == 401)
    }

    @Test("invalid logout tokens are 400 invalid_request, a replayed jti too; no-store either way")
    func invalidTokens() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let provider = fixture.provider
        func post(_ body: String) async throws -> TestResponse {
            try await fixture.gateway.send(
                TestRequest(
                    .POST, "/.gateway/backchannel-logout",
                    headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body))
        }
        let invalid: [String] = [
            try provider.makeLogoutToken(clientID: "another-client", sid: nil, sub: "u-1001"),
            try provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: "u-1001") { $0["nonce"] = "n" },
            try provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: "u-1001") { $0["events"] = nil },
            try provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: nil),
            try provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: "u-1001") {
                $0["iat"] = .number(JSONNumber(Int(Date().timeIntervalSince1970) - 3600))
            },
            try TestKeys.rsa.sign(["iss": .string(provider.issuer), "aud": "gateway", "sub": "u-1001", "jti": "x"]),
            "not-a-jwt",
        ]
        for token in invalid {
            let response = try await post("logout_token=\(FormEncoding.encode(token))")
            #expect(response.status == 400)
            #expect(response.json == ["error": "invalid_request"])
            #expect(response.header("cache-control") == "no-store")
        }
        #expect(try await post("nothing=here").status == 400)
        #expect(try await browser.get(fixture.gateway, "/api/x").status == 200, "no invalid token ended a session")

        let valid = try provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: "u-1001", jti: "once")
        let accepted = try await post("logout_token=\(FormEncoding.encode(valid))")
        #expect(accepted.status == 200)
        #expect(accepted.header("cache-control") == "no-store")
        let replayed = try await post("logout_token=\(FormEncoding.encode(valid))")
        #expect(replayed.status == 400)
        // A body far larger than any logout token is refused unread.
        let huge = try await post("logout_token=" + String(repeating: "a", count: 200_000))
        #expect(huge.status == 400)
    }
}
