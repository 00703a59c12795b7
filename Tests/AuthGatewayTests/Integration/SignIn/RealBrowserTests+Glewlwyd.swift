import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

extension RealBrowserTests {
    /// The headless browser against Glewlwyd (`GlewlwydSignInTests.start`, its web application
    /// served): Glewlwyd's own login page is filled in, its scopes granted, and Glewlwyd's own
    /// end-session page ends its session after the gateway's sign-out.
    @Test("Glewlwyd's own login page signs the browser in; sign-out ends at Glewlwyd's end-session page")
    func glewlwyd() async throws {
        let setup = try await GlewlwydSignInTests.start(host: "localhost", servingLoginPage: true)
        atTestEnd { await setup.stop() }
        let page = "/some/page?x=1"
        let report: JSONValue
        do {
            report = try await HeadlessBrowser.run(
                flow: "glewlwyd", gateway: setup.publicBaseURL,
                arguments: [
                    "--page", page, "--user", GlewlwydServer.username, "--password", setup.glewlwyd.userPassword,
                ])
        } catch {
            // Glewlwyd's side of a failed flow: an `error=server_error` on the callback says
            // only that something failed inside it.
            let log = setup.glewlwyd.log.suffix(4000)
            throw HeadlessBrowser.FlowFailed(description: "\(error); Glewlwyd's log: \(log)")
        }

        let login = try #require(report["login"])
        #expect(login["url"]?.stringValue?.hasPrefix("http://127.0.0.1:\(setup.glewlwyd.port)/login.html?") == true)
        #expect(login["status"]?.int == 200)
        let authorize = try #require(login["authorize"])
        #expect(authorize["client_id"]?.stringValue == GlewlwydServer.browserClientID)
        #expect(authorize["response_type"] == "code")
        #expect(authorize["code_challenge_method"] == "S256")
        #expect(authorize["redirect_uri"]?.stringValue == setup.publicBaseURL + "/.gateway/callback")
        for name in ["state", "nonce", "code_challenge"] {
            #expect(authorize[name]?.stringValue?.isEmpty == false, "\(name) is sent")
        }
        #expect(report["grantable"]?.arrayValue?.contains(.string(GlewlwydServer.scope)) == true)

        let landed = try #require(report["landed"])
        #expect(landed["url"]?.stringValue == setup.publicBaseURL + page)
        #expect(landed["status"]?.int == 200, "landed: \(landed.jsonText.prefix(2000))")
        let authorization = try #require(landed.echoed("authorization").first)
        let claims = try GlewlwydTests.payload(of: String(authorization.dropFirst("Bearer ".count)))
        #expect(claims["iss"]?.stringValue == setup.glewlwyd.issuer)
        #expect(claims["client_id"]?.stringValue == GlewlwydServer.browserClientID)
        #expect(
            landed.echoed("cookie").allSatisfy { !$0.contains("gateway-") }, "no gateway cookie reaches the backend")
        let session = try #require(HeadlessBrowser.cookies(landed, domain: "localhost")["gateway-session"])
        #expect(session["httpOnly"] == .bool(true))
        #expect(session["valueLength"]?.int == 43)

        // The gateway's sign-out led to Glewlwyd's end-session prompt for this client's session.
        let endSession = try #require(report["endSession"])
        #expect(endSession["query"]?["prompt"] == "end_session")
        #expect(endSession["query"]?["client_id"]?.stringValue == GlewlwydServer.browserClientID)
        #expect(endSession["query"]?["callback_url"]?.stringValue == setup.publicBaseURL + "/")
        // Logged out there, the browser stays on Glewlwyd's page: Glewlwyd 2.7.5 sends it on to
        // the post-logout URI only when the end-session request carries a `state`
        // (protocol_oidc.c, `callback_oidc_end_session`), which the gateway does not send.
        let ended = try #require(report["afterEndSession"])
        #expect(ended["url"]?.stringValue?.hasPrefix("http://127.0.0.1:\(setup.glewlwyd.port)/login.html?") == true)
        // Glewlwyd's session ended too: the page asks for a user name again.
        let again = try #require(report["afterSignOut"])
        #expect(again["authorize"]?["client_id"]?.stringValue == GlewlwydServer.browserClientID)
    }
}
