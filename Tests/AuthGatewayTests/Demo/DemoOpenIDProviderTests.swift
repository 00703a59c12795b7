import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The demo auth service as an OpenID Provider, driven over real sockets by a scripted relying
/// party (no gateway): discovery, the login form, code + PKCE, ID token checks, refresh,
/// userinfo, and what it refuses.
@Suite("Demo OpenID Provider: sign-in (real sockets)", .awaitsCleanups, .timeLimit(.minutes(2)))
struct DemoOpenIDProviderTests {
    /// The provider, started, with the scripted client registered.
    static func start(backChannelLogoutURI: String? = nil) async throws -> ScriptedRelyingParty {
        let provider = try DemoAuthService(tokenLifetimeSeconds: 60)
        try await provider.start(group: TestGroup.shared)
        atTestEnd { await provider.stop() }
        let client = ScriptedRelyingParty.client(backChannelLogoutURI: backChannelLogoutURI)
        provider.register(client)
        return ScriptedRelyingParty(provider: provider, client: client)
    }

    @Test func discoveryNamesEveryEndpointAndTheIssuerOfTheTokens() async throws {
        let rp = try await Self.start()
        let base = rp.provider.baseURL
        let document = try #require(try await rp.send(.GET, base + "/.well-known/openid-configuration").json)
        #expect(document["issuer"]?.stringValue == base)
        #expect(document["authorization_endpoint"]?.stringValue == base + "/authorize")
        #expect(document["token_endpoint"]?.stringValue == base + "/token")
        #expect(document["userinfo_endpoint"]?.stringValue == base + "/userinfo")
        #expect(document["jwks_uri"]?.stringValue == base + "/.well-known/jwks.json")
        #expect(document["end_session_endpoint"]?.stringValue == base + "/end-session")
        #expect(document["backchannel_logout_supported"] == true)
        #expect(document["backchannel_logout_session_supported"] == true)
        #expect(document["code_challenge_methods_supported"] == ["S256"])
        #expect(document["response_types_supported"] == ["code"])
        #expect(document["id_token_signing_alg_values_supported"] == ["RS256"])
        #expect(document["grant_types_supported"] == ["authorization_code", "refresh_token"])
        #expect(
            document["token_endpoint_auth_methods_supported"] == ["client_secret_basic", "client_secret_post"])
        let jwks = try await rp.send(.GET, try #require(document["jwks_uri"]?.stringValue))
        #expect(try JWKSet.parse(text: jwks.text).keys.map(\.kid) == [rp.provider.signer.kid])
    }

    @Test func aUserSignsInWithTheFormAndTheCodeBuysVerifiedTokens() async throws {
        let rp = try await Self.start()
        let flow = ScriptedRelyingParty.Flow()
        let page = try await rp.send(.GET, rp.authorizationURL(flow))
        #expect(page.status == 200)
        #expect(page.header("content-type") == "text/html; charset=utf-8")
        #expect(page.header("cache-control") == "no-store")
        #expect(page.text.contains(#"<form method="post" action="/authorize">"#))
        let hidden = Dictionary(ScriptedRelyingParty.hiddenFields(of: page.text), uniquingKeysWith: { $1 })
        #expect(hidden["state"] == flow.state && hidden["nonce"] == flow.nonce)
        #expect(hidden["code_challenge"] == flow.challenge && hidden["code_challenge_method"] == "S256")
        #expect(rp.provider.lastAuthorizationParameters["code_challenge_method"] == "S256")

        // A wrong password shows the form again, with the user name kept and nothing set.
        let wrong = try await rp.signIn(flow, password: "guess")
        #expect(wrong.status == 200 && wrong.header("location") == nil && wrong.header("set-cookie") == nil)
        #expect(wrong.text.contains("Incorrect user name or password."))
        #expect(wrong.text.contains(#"value="alice@example.com""#))

        let signedIn = try await rp.signIn(flow)
        #expect(signedIn.status == 303)
        let location = try #require(signedIn.header("location"))
        #expect(location.hasPrefix(ScriptedRelyingParty.redirectURI + "?code="))
        let query = ScriptedRelyingParty.query(of: location)
        #expect(query["state"] == flow.state && query["iss"] == rp.provider.issuer)
        #expect(rp.providerCookie != nil, "the provider's own session cookie")
        #expect(signedIn.header("set-cookie")?.contains("HttpOnly; SameSite=Lax") == true)
        let session = try #require(rp.provider.providerSessions.first)
        #expect(session.sub == "u-1001" && session.clientIDs.isEmpty)

        let answer = try await rp.exchange(try #require(query["code"]), flow)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.header("cache-control") == "no-store")
        let tokens = try #require(answer.json)
        #expect(tokens["token_type"] == "Bearer" && tokens["expires_in"] == 60)
        let idToken = try #require(tokens["id_token"]?.stringValue)
        let accessToken = try #require(tokens["access_token"]?.stringValue)
        #expect(tokens["refresh_token"]?.stringValue != nil)
        #expect(rp.provider.lastIssuedTokens?.idToken == idToken)
        #expect(rp.provider.providerSessions.first?.clientIDs == ["gateway"])

        // The ID token: signed by the JWKS key, for this client, with the flow's nonce.
        let id = try await rp.verify(idToken, audience: "gateway")
        #expect(id.subject == "u-1001")
        #expect(id.claims["nonce"]?.stringValue == flow.nonce)
        #expect(id.claims["azp"] == "gateway" && id.claims["sid"]?.stringValue == session.sid)
        #expect(id.claims["auth_time"]?.numberValue?.exactInt == session.authTime)
        #expect(id.claims["name"] == "Alice" && id.claims["email"] == "alice@example.com")
        #expect(id.timeFailure(now: Date().timeIntervalSince1970) == nil)
        #expect(ScriptedRelyingParty.claims(of: idToken, part: 0)?["alg"] == "RS256")

        // The access token is the demo API's, as RainMaker's login gives: the profile works.
        let access = try await rp.verify(accessToken, audience: "demo-api")
        #expect(access.subject == "u-1001" && access.claims["email"] == "alice@example.com")
        let profile = try await rp.send(
            .GET, rp.provider.baseURL + "/v1/user", headers: [("Authorization", accessToken)])
        #expect(profile.json?["user_id"] == "u-1001")
        let userinfo = try await rp.send(
            .GET, rp.provider.userinfoEndpoint, headers: [("Authorization", "Bearer \(accessToken)")])
        #expect(userinfo.json?["sub"] == "u-1001" && userinfo.json?["email"] == "alice@example.com")
        let anonymous = try await rp.send(.GET, rp.provider.userinfoEndpoint)
        #expect(anonymous.status == 401 && anonymous.header("www-authenticate")?.hasPrefix("Bearer") == true)
        #expect(rp.provider.userinfoCalls == 2)

        // Refresh, by either client authentication: new access and ID tokens, same session.
        let refreshToken = try #require(tokens["refresh_token"]?.stringValue)
        for basic in [true, false] {
            let refreshed = try await rp.token(
                [("grant_type", "refresh_token"), ("refresh_token", refreshToken)], basic: basic)
            #expect(refreshed.status == 200, "\(refreshed.text)")
            let newID = try await rp.verify(try #require(refreshed.json?["id_token"]?.stringValue), audience: "gateway")
            #expect(newID.claims["sid"]?.stringValue == session.sid && newID.claims["nonce"] == nil)
            #expect(newID.claims["auth_time"] == id.claims["auth_time"])
            _ = try await rp.verify(try #require(refreshed.json?["access_token"]?.stringValue), audience: "demo-api")
            #expect(refreshed.json?["refresh_token"] == nil, "not rotated")
        }
        #expect(rp.provider.tokenCalls == .init(total: 3, authorizationCode: 1, refreshToken: 2))
    }

    /// Each case spends a fresh code the wrong way.
    @Test func theTokenEndpointRefusesCodesPresentedWrongly() async throws {
        let rp = try await Self.start()
        func attempt(
            _ change: (inout [(String, String)]) -> Void, basic: Bool = true, secret: String? = nil
        )
            async throws -> TestResponse
        {
            let flow = ScriptedRelyingParty.Flow()
            var fields = [
                ("grant_type", "authorization_code"), ("code", try await rp.code(flow)),
                ("redirect_uri", ScriptedRelyingParty.redirectURI), ("code_verifier", flow.verifier),
            ]
            change(&fields)
            return try await rp.token(fields, basic: basic, secret: secret)
        }
        let withoutVerifier = try await attempt { $0.removeLast() }
        #expect(withoutVerifier.status == 400 && withoutVerifier.json?["error"] == "invalid_grant")
        let wrongVerifier = try await attempt { $0[3].1 = ScriptedRelyingParty.Flow().verifier }
        #expect(wrongVerifier.status == 400 && wrongVerifier.json?["error"] == "invalid_grant")
        let wrongRedirect = try await attempt { $0[2].1 = "http://127.0.0.1:1/elsewhere" }
        #expect(wrongRedirect.status == 400 && wrongRedirect.json?["error"] == "invalid_grant")
        let unknownCode = try await attempt { $0[1].1 = "made-up" }
        #expect(unknownCode.status == 400 && unknownCode.json?["error"] == "invalid_grant")
        let wrongSecret = try await attempt({ _ in }, secret: "guess")
        #expect(wrongSecret.status == 401 && wrongSecret.json?["error"] == "invalid_client")
        #expect(wrongSecret.header("www-authenticate")?.hasPrefix("Basic") == true)
        let twoAuthentications = try await attempt { $0 += [("client_secret", "s3cret word")] }
        #expect(twoAuthentications.status == 400 && twoAuthentications.json?["error"] == "invalid_request")
        let unsupported = try await attempt { $0[0].1 = "password" }
        #expect(unsupported.json?["error"] == "unsupported_grant_type")
        let noGrantType = try await attempt { $0.removeFirst() }
        #expect(noGrantType.json?["error"] == "invalid_request")

        // A code works once; its replay fails and revokes the refresh token the first use got.
        let flow = ScriptedRelyingParty.Flow()
        let code = try await rp.code(flow)
        let first = try await rp.exchange(code, flow, basic: false)
        #expect(first.status == 200)
        let replay = try await rp.exchange(code, flow)
        #expect(replay.status == 400 && replay.json?["error"] == "invalid_grant")
        let refreshToken = try #require(first.json?["refresh_token"]?.stringValue)
        let refreshed = try await rp.token([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
        #expect(refreshed.status == 400 && refreshed.json?["error"] == "invalid_grant")
    }

    @Test func authorizationErrorsRedirectOnlyToTheRegisteredURI() async throws {
        let rp = try await Self.start()
        let flow = ScriptedRelyingParty.Flow()
        let unregistered = try await rp.send(
            .GET, rp.authorizationURL(flow) { $0[2].1 = "https://evil.example/cb" })
        #expect(unregistered.status == 400 && unregistered.header("location") == nil)
        #expect(unregistered.text.contains("not registered"))
        let unknownClient = try await rp.send(.GET, rp.authorizationURL(flow) { $0[1].1 = "other" })
        #expect(unknownClient.status == 400 && unknownClient.header("location") == nil)

        let withoutPKCE = try await rp.send(.GET, rp.authorizationURL(flow) { $0.removeLast(2) })
        #expect(withoutPKCE.status == 302)
        let refused = ScriptedRelyingParty.query(of: withoutPKCE.header("location") ?? "")
        #expect(refused["error"] == "invalid_request" && refused["state"] == flow.state)
        #expect(withoutPKCE.header("location")?.hasPrefix(ScriptedRelyingParty.redirectURI + "?error=") == true)
        let plain = try await rp.send(.GET, rp.authorizationURL(flow) { $0[7].1 = "plain" })
        #expect(ScriptedRelyingParty.query(of: plain.header("location") ?? "")["error"] == "invalid_request")

        let silent = try await rp.send(.GET, rp.authorizationURL(flow) { $0.append(("prompt", "none")) })
        #expect(ScriptedRelyingParty.query(of: silent.header("location") ?? "")["error"] == "login_required")

        // "Cancel" on the form.
        let page = try await rp.send(.GET, rp.authorizationURL(flow))
        let cancel = try await rp.send(
            .POST, rp.provider.authorizationEndpoint,
            form: ScriptedRelyingParty.hiddenFields(of: page.text) + [("action", "cancel")])
        #expect(cancel.status == 303)
        let cancelled = ScriptedRelyingParty.query(of: cancel.header("location") ?? "")
        #expect(cancelled["error"] == "access_denied" && cancelled["state"] == flow.state && cancelled["code"] == nil)
        #expect(rp.provider.providerSessions.isEmpty)
    }

    @Test func aBrowserSignedInAtTheProviderSkipsTheFormUnlessPromptIsLogin() async throws {
        let rp = try await Self.start()
        _ = try await rp.code(ScriptedRelyingParty.Flow())
        let flow = ScriptedRelyingParty.Flow()
        let again = try await rp.send(.GET, rp.authorizationURL(flow))
        #expect(again.status == 302)
        #expect(ScriptedRelyingParty.query(of: again.header("location") ?? "")["state"] == flow.state)
        let login = try await rp.send(.GET, rp.authorizationURL(flow) { $0.append(("prompt", "login")) })
        #expect(login.status == 200 && login.text.contains("<form"))
        // The same user signing in again keeps the provider session (one sid for both tabs).
        let sid = try #require(rp.provider.providerSessions.first?.sid)
        let form = ScriptedRelyingParty.hiddenFields(of: login.text)
        let relogin = try await rp.send(
            .POST, rp.provider.authorizationEndpoint,
            form: form + [("username", "alice@example.com"), ("password", "alice-password"), ("action", "sign-in")])
        #expect(relogin.status == 303)
        #expect(rp.provider.providerSessions.map(\.sid) == [sid])
        rp.provider.skipsLoginFormWhenSignedIn = false
        #expect(try await rp.send(.GET, rp.authorizationURL(flow)).status == 200)
        // Without a browser: the form's answer for a relying party's redirect.
        let location = try #require(
            rp.provider.signIn(authorizationURL: rp.authorizationURL(flow), userName: "admin@example.com"))
        #expect(ScriptedRelyingParty.query(of: location)["code"] == rp.provider.lastIssuedCode)
    }

    @Test func hostileReflectedValuesAreEscaped() async throws {
        let rp = try await Self.start()
        var flow = ScriptedRelyingParty.Flow()
        flow.state = #""><script>alert(1)</script>"#
        flow.nonce = "'onmouseover='alert(2)"
        let page = try await rp.send(.GET, rp.authorizationURL(flow))
        #expect(page.status == 200)
        #expect(!page.text.contains("<script>") && !page.text.contains("'onmouseover"))
        #expect(page.text.contains("&lt;script&gt;") && page.header("content-security-policy") != nil)
        let hidden = Dictionary(ScriptedRelyingParty.hiddenFields(of: page.text), uniquingKeysWith: { $1 })
        #expect(hidden["state"] == flow.state && hidden["nonce"] == flow.nonce, "carried unchanged")

        let wrong = try await rp.signIn(flow, as: "<img src=x onerror=alert(3)>", password: "x")
        #expect(wrong.status == 200 && !wrong.text.contains("<img"))
        let unknownClient = try await rp.send(.GET, rp.authorizationURL(flow) { $0[1].1 = "<script>x</script>" })
        #expect(unknownClient.status == 400 && !unknownClient.text.contains("<script>"))

        let signedIn = try await rp.signIn(flow)
        let location = try #require(signedIn.header("location"))
        #expect(!location.contains("<") && !location.contains("\""), "encoded in the redirect")
        #expect(ScriptedRelyingParty.query(of: location)["state"] == flow.state)
    }
}
