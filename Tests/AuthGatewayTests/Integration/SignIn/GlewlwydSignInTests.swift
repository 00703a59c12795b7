import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Browser sign-in against a real third-party provider: Glewlwyd 2.7 (the Debian package),
/// started by the test (`GlewlwydServer`), the gateway configured from its discovery document,
/// and a scripted browser (docs/browser-sign-in.md, "Providers").
///
/// Fails (never skips) where the package is missing: `.ci/run` installs it.
@Suite("Browser sign-in against Glewlwyd (a real provider)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct GlewlwydSignInTests {
    /// The scopes the gateway asks for. Glewlwyd puts the granted scopes, space-separated, in
    /// its access tokens' `aud` as one string (unless the client sends `resource`), so that
    /// string is the gateway's accepted audience.
    static let scopes = ["openid", GlewlwydServer.scope]
    static var audience: String { Self.scopes.joined(separator: " ") }

    struct Setup {
        let glewlwyd: GlewlwydServer
        let gateway: GatewayFixture
        let publicBaseURL: String

        func stop() async {
            await self.gateway.stop()
            await self.glewlwyd.stop()
        }
    }

    /// Glewlwyd, then the gateway in front of an echo backend (its public base names its port,
    /// known once it listens: it starts with a placeholder and is reloaded with the real one),
    /// then the gateway's client at Glewlwyd. The public base names the gateway as `host`
    /// (`localhost` keeps a real browser's cookies for the gateway apart from Glewlwyd's, on
    /// 127.0.0.1); Glewlwyd serves its login page with `servingLoginPage`.
    static func start(
        host: String = "127.0.0.1", servingLoginPage: Bool = false,
        configure: @escaping (inout JSONObject) -> Void = { _ in }
    ) async throws -> Setup {
        let glewlwyd = try await GlewlwydServer.start(servingLoginPage: servingLoginPage)
        do {
            func configuration(_ publicBaseURL: String) -> (inout JSONObject) -> Void {
                { document in
                    document["tokens"] = [
                        "issuers": [
                            [
                                "issuer": .string(glewlwyd.issuer), "discovery": true,
                                "audiences": [.string(Self.audience)], "leewaySeconds": 5,
                            ]
                        ]
                    ]
                    document["authService"] = [
                        "discoveryIssuer": .string(glewlwyd.issuer), "timeoutMilliseconds": 20000,
                    ]
                    document["browserSignIn"] = [
                        "issuer": .string(glewlwyd.issuer), "clientId": .string(GlewlwydServer.browserClientID),
                        "clientSecret": "${GLEWLWYD_BROWSER_SECRET}", "publicBaseURL": .string(publicBaseURL),
                        "scopes": .array(Self.scopes.map { .string($0) }),
                    ]
                    document["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Scope": "claims.scope"]
                    document["routes"] = [
                        ["name": "api", "pathPrefix": "/api/", "backend": "api", "auth": "required"],
                        ["name": "app", "pathPrefix": "/", "backend": "api", "auth": "required", "signIn": true],
                    ]
                    configure(&document)
                }
            }
            let gateway = try await GatewayFixture.start(
                environment: ["GLEWLWYD_BROWSER_SECRET": GlewlwydServer.browserClientSecret],
                configure: configuration("http://127.0.0.1:1"))
            do {
                let base = "http://\(host):\(gateway.port)"
                try gateway.reload(configuration(base))
                let applied = await eventually {
                    let start = try? await gateway.send(TestRequest(.GET, "/.gateway/sign-in"))
                    return start?.header("location")?.contains(FormEncoding.encode(base + "/.gateway/callback")) == true
                }
                guard applied else { throw AuthStepFailure("the reloaded public base never applied") }
                try await glewlwyd.registerBrowserClient(publicBaseURL: base)
                return Setup(glewlwyd: glewlwyd, gateway: gateway, publicBaseURL: base)
            } catch {
                await gateway.stop()
                throw error
            }
        } catch {
            await glewlwyd.stop()
            throw error
        }
    }

    /// Signs `browser` in from a navigation to `path`, Glewlwyd's part done in `glewlwydBrowser`
    /// (its own cookie jar: another origin); returns the authorization request's query.
    static func signIn(
        _ setup: Setup, _ browser: inout ScriptedBrowser, glewlwydBrowser: inout ScriptedBrowser, to path: String
    ) async throws -> Substring {
        let navigation = try await browser.navigate(setup.gateway, path)
        #expect(navigation.status == 302)
        let authorize = try #require(navigation.header("location"))
        #expect(authorize.hasPrefix(setup.glewlwyd.issuer + "/auth?"), "\(authorize)")
        let query = Substring(try #require(authorize.split(separator: "?", maxSplits: 1).last))
        let callbackURL = try await setup.glewlwyd.authorize(
            &glewlwydBrowser, authorizationURL: authorize, scope: Self.audience)
        let callback = try #require(
            callbackURL.range(of: setup.publicBaseURL + "/.gateway/callback?").map {
                String(callbackURL[$0.lowerBound...].dropFirst(setup.publicBaseURL.count))
            }, "Glewlwyd sent the browser to \(callbackURL)")
        let landed = try await browser.get(setup.gateway, callback)
        #expect(landed.status == 302, "the callback: \(landed.status) \(landed.text)")
        #expect(landed.header("location") == path)
        return query
    }

    @Test("a navigation signs in at Glewlwyd (code, PKCE S256, nonce); the backend gets Glewlwyd's access token")
    func signInAndUse() async throws {
        let setup = try await Self.start()
        atTestEnd { await setup.stop() }
        var browser = ScriptedBrowser()
        var glewlwydBrowser = ScriptedBrowser()
        let query = try await Self.signIn(setup, &browser, glewlwydBrowser: &glewlwydBrowser, to: "/reports/q3")

        #expect(FormDecoding.value("response_type", in: query) == "code")
        #expect(FormDecoding.value("client_id", in: query) == GlewlwydServer.browserClientID)
        #expect(FormDecoding.value("redirect_uri", in: query) == setup.publicBaseURL + "/.gateway/callback")
        #expect(FormDecoding.value("scope", in: query) == Self.audience)
        #expect(FormDecoding.value("code_challenge_method", in: query) == "S256")
        #expect(FormDecoding.value("code_challenge", in: query)?.utf8.count == 43)
        #expect(FormDecoding.value("nonce", in: query)?.isEmpty == false)
        #expect(FormDecoding.value("state", in: query)?.isEmpty == false)
        #expect(browser.cookies["gateway-session"]?.utf8.count == 43)

        let page = try await browser.navigate(setup.gateway, "/reports/q3")
        #expect(page.status == 200, "\(page.text)")
        let authorization = try #require(page.echoedHeader("authorization").first)
        #expect(authorization.hasPrefix("Bearer "))
        let token = String(authorization.dropFirst("Bearer ".count))
        let claims = try GlewlwydTests.payload(of: token)
        #expect(claims["iss"]?.stringValue == setup.glewlwyd.issuer)
        #expect(claims["client_id"]?.stringValue == GlewlwydServer.browserClientID)
        #expect(claims["aud"]?.stringValue == Self.audience)
        #expect(page.echoedHeader("x-user-subject") == [try #require(claims["sub"]?.stringValue)])
        #expect(page.echoedHeader("cookie").allSatisfy { !$0.contains("gateway-session") })
        // A fetch from the page reaches the API route with the same session.
        let api = try await browser.get(setup.gateway, "/api/orders", headers: [("Accept", "application/json")])
        #expect(api.status == 200)
        #expect(api.echoedHeader("authorization") == [authorization])
    }

    @Test("sign-out goes to Glewlwyd's end-session endpoint with id_token_hint, which Glewlwyd accepts")
    func signOut() async throws {
        let setup = try await Self.start()
        atTestEnd { await setup.stop() }
        var browser = ScriptedBrowser()
        var glewlwydBrowser = ScriptedBrowser()
        _ = try await Self.signIn(setup, &browser, glewlwydBrowser: &glewlwydBrowser, to: "/")
        let old = browser
        let out = try await browser.send(
            setup.gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
        #expect(out.status == 302)
        let location = try #require(out.header("location"))
        #expect(location.hasPrefix(setup.glewlwyd.issuer + "/end_session?"), "\(location)")
        let query = Substring(try #require(location.split(separator: "?", maxSplits: 1).last))
        let idToken = try #require(FormDecoding.value("id_token_hint", in: query))
        let claims = try GlewlwydTests.payload(of: idToken)
        #expect(claims["iss"]?.stringValue == setup.glewlwyd.issuer)
        #expect(claims["aud"]?.stringValue == GlewlwydServer.browserClientID)
        let sid = try #require(glewlwydBrowser.cookies[GlewlwydServer.sessionCookie])
        #expect(claims["sid"]?.stringValue == sid)
        #expect(FormDecoding.value("client_id", in: query) == GlewlwydServer.browserClientID)
        #expect(FormDecoding.value("post_logout_redirect_uri", in: query) == setup.publicBaseURL + "/")
        #expect(browser.cookies["gateway-session"] == nil)
        var stale = old
        #expect(try await stale.navigate(setup.gateway, "/").status == 302)

        // Glewlwyd takes the hint as an active ID token of that session (else its prompt would
        // be `single_logout`) and the post-logout URI as registered (else no `callback_url`): it
        // sends the browser to its login page to confirm the end of the session.
        let endSession = try await glewlwydBrowser.get(
            setup.glewlwyd, try #require(setup.glewlwyd.path(of: location)))
        #expect(endSession.status == 302)
        let prompt = try #require(endSession.header("location"))
        let promptQuery = Substring(try #require(prompt.split(separator: "?", maxSplits: 1).last))
        #expect(FormDecoding.value("prompt", in: promptQuery) == "end_session", "\(prompt)")
        #expect(FormDecoding.value("sid", in: promptQuery) == sid)
        #expect(FormDecoding.value("callback_url", in: promptQuery) == setup.publicBaseURL + "/")
    }

    @Test("Glewlwyd ending its session sends a logout token that ends the gateway's session")
    func backchannelLogout() async throws {
        let setup = try await Self.start()
        atTestEnd { await setup.stop() }
        var browser = ScriptedBrowser()
        var glewlwydBrowser = ScriptedBrowser()
        _ = try await Self.signIn(setup, &browser, glewlwydBrowser: &glewlwydBrowser, to: "/")
        var other = ScriptedBrowser()
        var otherGlewlwyd = ScriptedBrowser()
        _ = try await Self.signIn(setup, &other, glewlwydBrowser: &otherGlewlwyd, to: "/")
        #expect(try await browser.navigate(setup.gateway, "/").status == 200)
        let sid = try #require(glewlwydBrowser.cookies[GlewlwydServer.sessionCookie])
        #expect(otherGlewlwyd.cookies[GlewlwydServer.sessionCookie] != sid)

        try await setup.glewlwyd.endSession(&glewlwydBrowser, sid: sid)
        // Glewlwyd posts the logout token from a thread of its own: wait (bounded) for it.
        let ended = await eventually(timeout: .seconds(20)) {
            var probe = browser
            let response = try? await probe.get(setup.gateway, "/api/x", headers: [("Accept", "application/json")])
            return response?.status == 401
        }
        #expect(ended, "the gateway's session outlived Glewlwyd's; Glewlwyd's log: \(setup.glewlwyd.log)")
        #expect(try await browser.navigate(setup.gateway, "/").status == 302)
        // The other sign-in, another Glewlwyd session, goes on.
        #expect(try await other.navigate(setup.gateway, "/").status == 200)
        let metrics = try await Self.metrics(setup.gateway)
        #expect(metrics.contains(#"auth_gateway_sign_outs_total{kind="backchannel"} 1"#))
    }

    static func metrics(_ gateway: GatewayFixture) async throws -> String {
        let connection = try await TestConnection.connect(port: gateway.adminPort)
        return try await withCleanup({ await connection.close() }) { () async throws in
            try await connection.send(TestRequest(.GET, "/metrics")).text
        }
    }
}
