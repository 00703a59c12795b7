import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

#if canImport(Glibc)
import Glibc
#endif

/// Browser sign-in in a real headless browser (Chromium through selenium, `HeadlessBrowser`):
/// the gateway of `SignInFixture` in front of the demo's OpenID Provider, its HTML login form
/// filled in by the browser, and the browser's own cookie, redirect and `Sec-Fetch-*` handling
/// (docs/browser-sign-in.md); and in front of Glewlwyd, with its own pages
/// (RealBrowserTests+Glewlwyd.swift). The gateway is `localhost` to the browser and the provider
/// `127.0.0.1`, so their cookies stay apart. One browser at a time: each is heavy.
@Suite("Browser sign-in (headless Chromium)", .serialized, .timeLimit(.minutes(10)), .awaitsCleanups)
struct RealBrowserTests {
    @Test("a navigation signs in through the login form and lands on its page; the session cookie is HttpOnly")
    func signIn() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        let page = "/some/page?x=1"
        let report = try await HeadlessBrowser.run(
            flow: "sign-in", gateway: fixture.publicBaseURL, arguments: ["--page", page])

        let login = try #require(report["login"])
        #expect(login["url"]?.stringValue?.hasPrefix(fixture.provider.authorizationEndpoint + "?") == true)
        #expect(login["status"]?.int == 200)
        let query = try #require(login["query"])
        #expect(query["client_id"] == "gateway")
        #expect(query["response_type"] == "code")
        #expect(query["code_challenge_method"] == "S256")
        #expect(query["redirect_uri"]?.stringValue == fixture.publicBaseURL + "/.gateway/callback")
        for name in ["state", "nonce", "code_challenge"] {
            #expect(query[name]?.stringValue?.isEmpty == false, "\(name) is sent")
        }

        let landed = try #require(report["landed"])
        #expect(landed["url"]?.stringValue == fixture.publicBaseURL + page)
        #expect(landed["status"]?.int == 200)
        #expect(landed["echo"]?["uri"]?.stringValue == page)
        #expect(landed.echoed("x-user-email") == ["alice@example.com"])
        #expect(landed.echoed("x-user-subject") == ["u-1001"])
        let token = try #require(fixture.provider.lastIssuedTokens?.accessToken)
        #expect(landed.echoed("authorization") == ["Bearer \(token)"])
        #expect(
            landed.echoed("cookie").allSatisfy { !$0.contains("gateway-") }, "no gateway cookie reaches the backend")

        // The handle cookie: HttpOnly (not in document.cookie), Lax, on the gateway's host only.
        #expect(landed["documentCookie"]?.stringValue?.contains("gateway-session") == false)
        let gatewayCookies = HeadlessBrowser.cookies(landed, domain: "localhost")
        let session = try #require(gatewayCookies["gateway-session"], "cookies: \(landed["cookies"]?.jsonText ?? "")")
        #expect(session["httpOnly"] == .bool(true))
        #expect(session["sameSite"] == "Lax")
        #expect(session["path"] == "/")
        #expect(session["valueLength"]?.int == 43)
        #expect(gatewayCookies.keys.allSatisfy { !$0.hasPrefix("gateway-flow-") }, "the flow cookie is cleared")
        #expect(HeadlessBrowser.cookies(landed, domain: "127.0.0.1")["demo-idp-session"] != nil)
    }

    @Test("two tabs start signing in before either finishes; each lands on its own page")
    func twoTabs() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        let report = try await HeadlessBrowser.run(flow: "two-tabs", gateway: fixture.publicBaseURL)

        let flows = report["flowCookiesBeforeSignIn"]?.arrayValue ?? []
        #expect(flows.count == 2, "one flow cookie per tab: \(flows)")
        #expect(flows.allSatisfy { $0["domain"] == "localhost" && $0["httpOnly"] == .bool(true) })
        let tabs = try #require(report["tabs"]?.arrayValue)
        try #require(tabs.count == 2)
        #expect(tabs[0]["login"]?["query"]?["state"] != tabs[1]["login"]?["query"]?["state"])
        for (tab, path) in zip(tabs, ["/tab/one?n=1", "/tab/two?n=2"]) {
            #expect(tab["landed"]?["url"]?.stringValue == fixture.publicBaseURL + path)
            #expect(tab["landed"]?["status"]?.int == 200)
            #expect(tab["landed"]?["echo"]?["uri"]?.stringValue == path)
            #expect(tab["landed"]?.echoed("x-user-email") == ["alice@example.com"])
        }
        #expect(
            report["finalURLs"]?.arrayValue?.compactMap(\.stringValue) == [
                fixture.publicBaseURL + "/tab/one?n=1", fixture.publicBaseURL + "/tab/two?n=2",
            ])
        #expect(fixture.provider.tokenCalls.authorizationCode == 2, "each tab redeemed its own code")
    }

    @Test("sign-out by the site's form and by a typed URL ends both sessions; a cross-site post does nothing")
    func signOut() async throws {
        let fixture = try await SignInFixture.start()
        atTestEnd { await fixture.stop() }
        let page = "/some/page?x=1"
        let report = try await HeadlessBrowser.run(
            flow: "sign-out", gateway: fixture.publicBaseURL,
            arguments: ["--page", page, "--provider", fixture.provider.issuer])

        #expect(report["signedIn"]?["status"]?.int == 200)
        // A form on another site: refused, and the session is still there.
        let crossSite = try #require(report["crossSite"])
        #expect(crossSite["url"]?.stringValue == fixture.publicBaseURL + "/.gateway/sign-out")
        #expect(crossSite["status"]?.int == 403, "\(crossSite.jsonText)")
        #expect(crossSite["afterwards"]?["status"]?.int == 200)
        #expect(crossSite["afterwards"]?.echoed("x-user-email") == ["alice@example.com"])

        // The site's own form (POST) and a typed URL (GET, Sec-Fetch-Site: none) each end on the
        // login form: the gateway's session and the provider's ended (with the provider's
        // session alive, it would have signed the browser straight back in).
        for (name, ended) in [("postSignOut", report["postSignOut"]), ("getSignOut", report["getSignOut"])] {
            let ended = try #require(ended, "\(name)")
            #expect(ended["onLoginForm"] == .bool(true), "\(name): \(ended.jsonText)")
            #expect(ended["url"]?.stringValue?.hasPrefix(fixture.provider.authorizationEndpoint + "?") == true)
            #expect(HeadlessBrowser.cookies(ended, domain: "localhost")["gateway-session"] == nil, "\(name)")
            #expect(HeadlessBrowser.cookies(ended, domain: "127.0.0.1")["demo-idp-session"] == nil, "\(name)")
        }
        for name in ["afterPostSignOut", "afterGetSignOut"] {
            #expect(
                report[name]?["url"]?.stringValue?.hasPrefix(fixture.provider.authorizationEndpoint + "?") == true,
                "\(name): the protected page sends the browser to sign in again")
        }
        #expect(report["signedInAgain"]?["status"]?.int == 200)
        #expect(fixture.provider.providerSessions.isEmpty)
        // Both sign-outs went through the provider's end-session endpoint: each ended the
        // provider session the gateway's tokens came from, and the provider sent the gateway a
        // logout token for it.
        let deliveries = fixture.provider.backChannelDeliveries.filter { $0.clientID == "gateway" }
        let sids = deliveries.compactMap(\.sid)
        #expect(sids.count == 2 && Set(sids).count == 2, "\(sids)")
        #expect(deliveries.allSatisfy { $0.status == 200 }, "the gateway took each logout token")
    }

    @Test("the demo's browser walk-through: open the printed URL, sign in as alice, sign out")
    func demoWalkthrough() async throws {
        let demo = try ChildProcess([
            try RunningGateway.executable().path, "demo", "--port", "0", "--auth-port", "0", "--backend-port", "0",
            "--token-lifetime", "300",
        ])
        defer {
            demo.signal(SIGKILL)
            demo.waitUntilExit()
        }
        var url: String?
        let printed = await eventually(timeout: .seconds(120)) {
            url = Self.browserURL(in: demo.standardOutput)
            return url != nil || !demo.isRunning
        }
        let page = try #require(
            printed ? url : nil, "no browser URL printed: \(demo.standardOutput) \(demo.standardError)")
        let base = try #require(page.range(of: DemoRunner.browserPath).map { String(page[..<$0.lowerBound]) })

        let report = try await HeadlessBrowser.run(flow: "demo", gateway: base, arguments: ["--page", page])
        #expect(report["login"]?["query"]?["client_id"] == "gateway")
        let landed = try #require(report["landed"])
        #expect(landed["url"]?.stringValue == page)
        #expect(landed["status"]?.int == 200)
        #expect(landed.echoed("x-user-email") == ["alice@example.com"])
        #expect(landed.echoed("x-user-name") == ["alice@example.com"], "the profile's identity headers")
        #expect(landed.echoed("authorization").first?.hasPrefix("Bearer ey") == true)
        #expect(report["signOut"]?["onLoginForm"] == .bool(true), "\(report["signOut"]?.jsonText ?? "")")
        #expect(report["afterSignOut"]?["url"]?.stringValue?.contains("/authorize?") == true)

        // Ctrl-C stops it cleanly.
        demo.signal(SIGINT)
        try await demo.exited(timeout: .seconds(60))
        #expect(demo.terminationStatus == 0, "\(demo.standardError)")
    }

    /// The URL the demo tells a newcomer to open in a browser.
    static func browserURL(in output: String) -> String? {
        guard let open = output.range(of: "In a browser, open http://localhost:") else { return nil }
        let rest = output[output.index(open.upperBound, offsetBy: -"http://localhost:".count)...]
        let url = rest.prefix { !$0.isWhitespace }
        return url.hasSuffix(DemoRunner.browserPath) ? String(url) : nil
    }
}
