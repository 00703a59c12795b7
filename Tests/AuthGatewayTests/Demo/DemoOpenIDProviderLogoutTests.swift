import Foundation
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The demo OpenID Provider's logout over real sockets: RP-initiated logout, back-channel
/// logout tokens delivered to a scripted receiver (and its answer reported), the admin trigger,
/// and the test hooks the gateway's tests use.
@Suite("Demo OpenID Provider: logout and test hooks (real sockets)", .awaitsCleanups, .timeLimit(.minutes(2)))
struct DemoOpenIDProviderLogoutTests {
    static let backChannelPath = "/.gateway/backchannel-logout"

    /// A relying party's back-channel logout endpoint that answers `status`.
    static func receiver(status: HTTPResponseStatus = .ok) async throws -> ScriptedAuthService {
        let receiver = try await ScriptedAuthService.start { _ in SimpleResponse(status: status) }
        atTestEnd { await receiver.stop() }
        return receiver
    }

    /// Signs alice in and exchanges the code: the token answer and the provider session's sid.
    static func signedIn(_ rp: ScriptedRelyingParty) async throws -> (tokens: JSONValue, sid: String) {
        let flow = ScriptedRelyingParty.Flow()
        let answer = try await rp.exchange(try await rp.code(flow), flow)
        let tokens = try #require(answer.json, "\(answer.text)")
        let idToken = try #require(tokens["id_token"]?.stringValue)
        let sid = try #require(ScriptedRelyingParty.claims(of: idToken)?["sid"]?.stringValue)
        return (tokens, sid)
    }

    @Test func endSessionEndsTheSessionSendsTheLogoutTokenThenRedirects() async throws {
        let receiver = try await Self.receiver()
        let rp = try await DemoOpenIDProviderTests.start(backChannelLogoutURI: receiver.baseURL + Self.backChannelPath)
        let (tokens, sid) = try await Self.signedIn(rp)
        let idToken = try #require(tokens["id_token"]?.stringValue)
        let endSession = { (fields: [(String, String)]) in
            rp.provider.endSessionEndpoint + "?" + ScriptedRelyingParty.form(fields)
        }

        // Refused before anything ends: an unregistered return, a forged hint.
        let unregistered = try await rp.send(
            .GET,
            endSession([
                ("id_token_hint", idToken), ("post_logout_redirect_uri", "https://evil.example/"), ("state", "x"),
            ]))
        #expect(unregistered.status == 400 && unregistered.header("location") == nil)
        let forged = try await rp.send(.GET, endSession([("id_token_hint", String(idToken.dropLast(4)) + "AAAA")]))
        #expect(forged.status == 400)
        #expect(rp.provider.providerSessions.count == 1 && receiver.requests.isEmpty)

        let answer = try await rp.send(
            .GET,
            endSession([
                ("id_token_hint", idToken), ("client_id", "gateway"),
                ("post_logout_redirect_uri", ScriptedRelyingParty.postLogoutRedirectURI), ("state", "back-to-app"),
            ]))
        #expect(answer.status == 302)
        #expect(answer.header("location") == ScriptedRelyingParty.postLogoutRedirectURI + "?state=back-to-app")
        #expect(rp.providerCookie == nil, "the provider cookie is cleared")
        #expect(rp.provider.providerSessions.isEmpty)

        // Delivered before the redirect: one form POST with the logout token.
        let delivered = try #require(receiver.requests.first)
        #expect(receiver.requests.count == 1)
        #expect(delivered.method == .POST && delivered.path == Self.backChannelPath)
        #expect(delivered.headers.first(name: "content-type") == "application/x-www-form-urlencoded")
        let logoutToken = try #require(ScriptedRelyingParty.query(of: "?" + delivered.bodyText)["logout_token"])
        try await Self.expectLogoutToken(logoutToken, rp: rp, sid: sid)
        #expect(
            rp.provider.backChannelDeliveries.map(\.status) == [200]
                && rp.provider.backChannelDeliveries.first?.logoutToken == logoutToken)

        // What the session got is revoked; a second sign-out just says so.
        let refresh = try await rp.token(
            [("grant_type", "refresh_token"), ("refresh_token", try #require(tokens["refresh_token"]?.stringValue))])
        #expect(refresh.status == 400 && refresh.json?["error"] == "invalid_grant")
        let again = try await rp.send(.GET, endSession([("id_token_hint", idToken)]))
        #expect(again.status == 200 && again.text.contains("signed out"))
        #expect(receiver.requests.count == 1, "nothing more to tell")
    }

    /// Back-Channel Logout 1.0 §2.4: signed by the provider's key, `typ: logout+jwt`, the event,
    /// `sid` and `sub`, a `jti`, no `nonce`.
    static func expectLogoutToken(_ token: String, rp: ScriptedRelyingParty, sid: String) async throws {
        let verified = try await rp.verify(token, audience: "gateway")
        #expect(ScriptedRelyingParty.claims(of: token, part: 0)?["typ"] == "logout+jwt")
        #expect(verified.claims["events"] == ["http://schemas.openid.net/event/backchannel-logout": [:]])
        #expect(verified.claims["sid"]?.stringValue == sid && verified.subject == "u-1001")
        #expect(verified.claims["jti"]?.stringValue?.isEmpty == false)
        #expect(verified.claims["iat"] != nil && verified.claims["nonce"] == nil)
        #expect(verified.timeFailure(now: Date().timeIntervalSince1970) == nil)
    }

    @Test func anAdminLogoutReportsWhatTheRelyingPartyAnswered() async throws {
        let receiver = try await Self.receiver(status: .badRequest)
        let rp = try await DemoOpenIDProviderTests.start(backChannelLogoutURI: receiver.baseURL + Self.backChannelPath)
        let (_, sid) = try await Self.signedIn(rp)
        let answer = try await rp.send(.POST, rp.provider.baseURL + "/demo/logout?sub=alice%40example.com")
        #expect(answer.status == 200)
        #expect(answer.json?["ended"] == .array([.string(sid)]))
        #expect(answer.json?["deliveries"]?.arrayValue?.first?["status"] == 400)
        #expect(answer.json?["deliveries"]?.arrayValue?.first?["sid"]?.stringValue == sid)
        #expect(try await rp.send(.POST, rp.provider.baseURL + "/demo/logout").status == 400)

        // The same from Swift, by sid.
        let (_, second) = try await Self.signedIn(rp)
        let deliveries = await rp.provider.endSessions(sid: second)
        #expect(deliveries.map(\.status) == [400] && deliveries.first?.sid == second)
        #expect(await rp.provider.endSessions(sid: second).isEmpty, "already ended")

        // A relying party that does not answer: no status, a failure.
        let refusing = try RefusingPort()
        rp.provider.register(
            ScriptedRelyingParty.client(backChannelLogoutURI: "http://127.0.0.1:\(refusing.port)/bcl"))
        _ = try await Self.signedIn(rp)
        let unanswered = await rp.provider.endSessions(sub: "u-1001")
        #expect(unanswered.count == 1 && unanswered.first?.status == nil && unanswered.first?.failure != nil)
        withExtendedLifetime(refusing) {}
    }

    @Test func testHooksMakeTheTokenEndpointFailAndSpoilIDTokens() async throws {
        let rp = try await DemoOpenIDProviderTests.start()
        rp.provider.failTokenEndpoint(.status(503), times: 1)
        let flow = ScriptedRelyingParty.Flow()
        let code = try await rp.code(flow)
        let unavailable = try await rp.exchange(code, flow)
        #expect(unavailable.status == 503 && unavailable.json?["error"] == "temporarily_unavailable")
        #expect(try await rp.exchange(code, flow).status == 200, "one failure, and the code was not spent")

        rp.provider.failTokenEndpoint(.error("invalid_grant"))
        for _ in 0..<2 {
            let flow = ScriptedRelyingParty.Flow()
            let refused = try await rp.exchange(try await rp.code(flow), flow)
            #expect(refused.status == 400 && refused.json?["error"] == "invalid_grant")
        }
        rp.provider.failTokenEndpoint(nil)
        #expect(rp.provider.tokenCalls == .init(total: 4, authorizationCode: 4, refreshToken: 0))

        let spoiled: [(DemoAuthService.IDTokenTampering, (VerifiedToken?, String) -> Bool)] = [
            (.badSignature, { verified, _ in verified == nil }),
            (.wrongAudience, { verified, _ in verified == nil }),
            (.wrongIssuer, { verified, _ in verified == nil }),
            (.wrongNonce, { verified, nonce in verified != nil && verified?.claims["nonce"]?.stringValue != nonce }),
            (.missingNonce, { verified, _ in verified != nil && verified?.claims["nonce"] == nil }),
            (.expired, { verified, _ in verified?.timeFailure(now: Date().timeIntervalSince1970) != nil }),
        ]
        for (tampering, refused) in spoiled {
            rp.provider.tamperNextIDToken(tampering)
            let flow = ScriptedRelyingParty.Flow()
            let answer = try await rp.exchange(try await rp.code(flow), flow)
            let idToken = try #require(answer.json?["id_token"]?.stringValue)
            let verified = try? await rp.verify(idToken, audience: "gateway")
            #expect(refused(verified, flow.nonce), "\(tampering)")
        }
        let flow2 = ScriptedRelyingParty.Flow()
        let clean = try await rp.exchange(try await rp.code(flow2), flow2)
        let cleanID = try await rp.verify(try #require(clean.json?["id_token"]?.stringValue), audience: "gateway")
        #expect(cleanID.claims["nonce"]?.stringValue == flow2.nonce, "the hook spoils one ID token only")
    }

    @Test func testsCanMakeAndDeliverTheirOwnLogoutTokens() async throws {
        let receiver = try await Self.receiver()
        let rp = try await DemoOpenIDProviderTests.start()
        let token = try rp.provider.makeLogoutToken(clientID: "gateway", sid: nil, sub: "u-1001", jti: "fixed") {
            $0["nonce"] = "not allowed"
        }
        let claims = try #require(ScriptedRelyingParty.claims(of: token))
        #expect(claims["jti"] == "fixed" && claims["nonce"] == "not allowed" && claims["sid"] == nil)
        let delivery = await rp.provider.deliverLogoutToken(token, to: receiver.baseURL + Self.backChannelPath)
        #expect(delivery.status == 200 && delivery.clientID == "gateway" && delivery.sub == "u-1001")
        #expect(rp.provider.backChannelDeliveries == [delivery])
        #expect(
            ScriptedRelyingParty.query(of: "?" + (receiver.requests.first?.bodyText ?? ""))["logout_token"] == token)
    }
}
