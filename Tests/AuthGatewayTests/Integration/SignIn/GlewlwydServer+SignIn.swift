import Foundation
import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// What browser sign-in needs from the throwaway Glewlwyd: a client for the gateway, and a user
/// agent's part of the code flow, done the way Glewlwyd's own login page does it.
///
/// The OIDC plugin instance is already set up for it (`GlewlwydServer.setUp`): the code flow
/// (`auth-type-code-enabled`), refresh tokens, PKCE (`pkce-allowed`; `S256` needs nothing
/// more), the end-session endpoint and the `sid` cookie (`session-management-allowed`,
/// `session-cookie-name`, `session-cookie-expiration`), back-channel logout
/// (`back-channel-logout-allowed`) and front-channel logout (`front-channel-logout-allowed`,
/// which Glewlwyd's own end-session page needs). The user has the `openid` scope: without it Glewlwyd issues
/// the code but no ID token.
extension GlewlwydServer {
    /// The confidential client the gateway signs browsers in as.
    static let browserClientID = "gateway-browser"
    /// Its secret: fixed, the server being throwaway and reachable on 127.0.0.1 only.
    static let browserClientSecret = "gateway-browser-secret"

    /// Registers the gateway at `publicBaseURL` as a client (docs/browser-sign-in.md,
    /// "Registering the gateway at the provider").
    ///
    /// Glewlwyd's end-session endpoint accepts a `post_logout_redirect_uri` only when it is in
    /// the client's `post_logout_redirect_uris` (plural, an array), a property the database
    /// client backend keeps only when its `data-format` names it: the package's database names
    /// `post_logout_redirect_uri` (singular) instead. So the backend's `data-format` gets the
    /// property first, and the backend is reset to read it.
    func registerBrowserClient(publicBaseURL: String) async throws {
        let session = try await self.adminSession()
        let module = try await self.admin(.GET, "/mod/client/database", session: session)
        guard case .object(var backend)? = module.json, case .object(var parameters)? = backend["parameters"],
            case .object(var format)? = parameters["data-format"]
        else {
            throw Failure(description: "the database client backend's parameters: \(module.text)")
        }
        format["post_logout_redirect_uris"] = ["multiple": true, "read": true, "write": true]
        parameters["data-format"] = .object(format)
        backend["parameters"] = .object(parameters)
        try await self.admin(.PUT, "/mod/client/database", backend, session: session)
        try await self.admin(.PUT, "/mod/client/database/reset", session: session)
        try await self.admin(
            .POST, "/client/",
            [
                "client_id": .string(Self.browserClientID), "name": "auth-gateway (browser sign-in)",
                "confidential": true, "password": .string(Self.browserClientSecret), "enabled": true,
                "authorization_type": ["code", "refresh_token"],
                "token_endpoint_auth_method": ["client_secret_basic"],
                "redirect_uri": [.string(publicBaseURL + "/.gateway/callback")],
                "post_logout_redirect_uris": [.string(publicBaseURL + "/")],
                "backchannel_logout_uri": .string(publicBaseURL + "/.gateway/backchannel-logout"),
                "backchannel_logout_session_required": "true",
            ],
            session: session)
    }

    /// The path and query of `url` on this server (nil for another origin).
    func path(of url: String) -> String? {
        let origin = "http://127.0.0.1:\(self.port)"
        guard url.hasPrefix(origin + "/") else { return nil }
        return String(url.dropFirst(origin.count))
    }

    /// The user agent's part of a sign-in at `authorizationURL`, as Glewlwyd's login page does
    /// it; returns the `Location` Glewlwyd finally sends the browser to (the client's redirect
    /// URI with `code` and `state`).
    ///
    /// Glewlwyd's authorization endpoint sends a browser to its login page on its first visit,
    /// whatever the session: it issues a code only to a request carrying `g_continue`
    /// (protocol_oidc.c, `callback_oidc_authorization`: "Check if the query parameter
    /// 'g_continue' exists, otherwise redirect to login page"). The login page logs the user in
    /// (`POST /api/auth/`), records the scopes the user grants the client
    /// (`PUT /api/auth/grant/<client>/`, space-separated) and then goes back to its
    /// `callback_url` with `g_continue` added (webapp-src/src/Login/Buttons.js).
    func authorize(_ browser: inout ScriptedBrowser, authorizationURL: String, scope: String) async throws -> String {
        let authorization = try #require(self.path(of: authorizationURL), "\(authorizationURL)")
        let first = try await browser.get(self, authorization)
        #expect(first.status == 302)
        let loginPage = try #require(first.header("location"), "the authorization endpoint: \(first.status)")
        #expect(loginPage.hasPrefix("http://127.0.0.1:\(self.port)/login.html?"), "\(loginPage)")
        let query = Substring(loginPage.split(separator: "?", maxSplits: 1)[1])
        let callback = try #require(FormDecoding.value("callback_url", in: query), "\(loginPage)")

        let login = try await browser.send(
            self,
            TestRequest(
                .POST, "/api/auth/", headers: [("Content-Type", "application/json")],
                body: JSONValue.object(["username": .string(Self.username), "password": .string(self.userPassword)])
                    .jsonText))
        #expect(login.status == 200, "the password login: \(login.status) \(login.text)")
        let grant = try await browser.send(
            self,
            TestRequest(
                .PUT, "/api/auth/grant/\(Self.browserClientID)/", headers: [("Content-Type", "application/json")],
                body: JSONValue.object(["scope": .string(scope)]).jsonText))
        #expect(grant.status == 200, "the grant: \(grant.status) \(grant.text)")

        let again = try #require(self.path(of: callback), "\(callback)")
        let answer = try await browser.get(self, again + (again.contains("?") ? "&" : "?") + "g_continue")
        #expect(answer.status == 302)
        return try #require(answer.header("location"), "the authorization endpoint: \(answer.status) \(answer.text)")
    }

    /// Ends the user's OpenID session `sid` as Glewlwyd's login page does on its end-session
    /// prompt (`DELETE /api/<plugin>/session/<sid>`, with the user's Glewlwyd session): Glewlwyd
    /// then posts a logout token to every client holding an ID token of that session that has
    /// a `backchannel_logout_uri`, from a thread of its own.
    func endSession(_ browser: inout ScriptedBrowser, sid: String) async throws {
        let response = try await browser.send(self, TestRequest(.DELETE, "/api/oidc/session/\(sid)"))
        #expect(response.status == 200, "ending the session: \(response.status) \(response.text)")
    }
}

extension GlewlwydServer: RequestSender {
    func send(_ request: TestRequest) async throws -> TestResponse {
        try await self.request(request)
    }
}
