import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// "Nothing secret is logged" for browser sign-in (docs/browser-sign-in.md): a real `serve`
/// process at `logging.level: debug` with the access log on signs a browser in through the
/// demo's provider, serves it, refuses a replayed callback and signs it out. No authorization
/// code, `state`, PKCE verifier, flow or session cookie, access, refresh or ID token — nor a
/// distinctive part of one — appears on standard output or standard error.
@Suite("Sign-in secrets are never logged (auth-gateway serve)", .timeLimit(.minutes(5)), .awaitsCleanups)
struct SignInLoggingTests {
    static func configuration(backend: EchoBackend, provider: DemoAuthService, base: String) -> JSONObject {
        var document = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1, level: "debug")
        document["tokens"] = [
            "issuers": [
                ["issuer": .string(provider.issuer), "discovery": true, "audiences": ["demo-api"], "leewaySeconds": 0]
            ]
        ]
        document["authService"] = ["discoveryIssuer": .string(provider.issuer), "timeoutMilliseconds": 20000]
        document["browserSignIn"] = [
            "issuer": .string(provider.issuer), "clientId": "gateway", "clientSecret": "gateway-secret",
            "publicBaseURL": .string(base), "scopes": ["openid", "profile", "email"],
        ]
        document["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "claims.email"]
        document["routes"] = [["name": "app", "pathPrefix": "/", "backend": "api", "signIn": true]]
        return document
    }

    @Test func noSignInSecretOnStandardOutputOrStandardError() async throws {
        let provider = try DemoAuthService(tokenLifetimeSeconds: 300)
        try await provider.start(group: TestGroup.shared)
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await backend.close()
            await provider.stop()
        }
        // The public base names the port, known once the process listens: start with a
        // placeholder, then reload (SIGHUP) with the real one.
        var document = Self.configuration(backend: backend, provider: provider, base: "http://localhost:1")
        let process = try RunningGateway(configuration: document)
        defer { process.kill() }
        let port = try await process.waitForPort()
        let gateway = GatewayAtPort(port: port)
        let base = "http://localhost:\(port)"
        provider.register(.gateway(publicBaseURL: base))
        document = Self.configuration(backend: backend, provider: provider, base: base)
        try process.rewrite(document)
        process.signal(SIGHUP)
        let applied = await eventually {
            let start = try? await gateway.send(TestRequest(.GET, "/.gateway/sign-in"))
            return start?.header("location")?.contains(FormEncoding.encode(base + "/.gateway/callback")) == true
        }
        try #require(applied, "the reloaded public base never applied:\n\(process.output)")

        var browser = ScriptedBrowser()
        let navigation = try await browser.navigate(gateway, "/reports/q3?tab=2")
        #expect(navigation.status == 302)
        let flowCookies = browser.cookies.filter { $0.key.hasPrefix("gateway-flow-") }.map(\.value)
        #expect(!flowCookies.isEmpty)
        let authorize = try #require(navigation.header("location"))
        let state = try #require(FormDecoding.value("state", in: Substring(authorize.split(separator: "?")[1])))
        let callback = try #require(provider.signIn(authorizationURL: authorize, userName: "alice@example.com"))
        let callbackPath = String(callback[try #require(callback.range(of: "/.gateway/callback")).lowerBound...])
        let code = try #require(provider.lastIssuedCode)
        let landed = try await browser.get(gateway, callbackPath)
        #expect(landed.status == 302, "\(landed.text)")
        let session = try #require(browser.cookies["gateway-session"])
        let verifier = try #require(provider.lastCodeVerifier)
        let issued = try #require(provider.lastIssuedTokens)

        let page = try await browser.navigate(gateway, "/reports/q3?tab=2")
        #expect(page.status == 200)
        #expect(page.echoedHeader("authorization") == ["Bearer \(issued.accessToken)"])
        // The same callback again (a replayed code and state): refused, and logged as such.
        var replay = ScriptedBrowser()
        replay.cookies = browser.cookies
        #expect(try await replay.get(gateway, callbackPath).status == 400)
        let out = try await browser.send(
            gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
        #expect(out.status == 302)

        // Every request reached the access log, then the process stops so that all is out.
        #expect(try await process.waitForOutput(timeout: .seconds(30)) { $0.contains("/.gateway/sign-out") })
        process.signal(SIGTERM)
        #expect(try await process.waitForExit(timeout: .seconds(30)) == 0)
        let stdout = process.standardOutput
        let stderr = process.standardError
        // The capture works: the access log has the callback (its path, not its query), and the
        // application log is at debug level.
        #expect(stdout.contains("\"path\":\"/.gateway/callback\""), "\(stdout)")
        #expect(stderr.contains(" debug "), "no debug line on stderr:\n\(stderr)")

        var secrets = [issued.accessToken, issued.idToken].flatMap(TokenLoggingTests.secrets(of:))
        for secret in [code, state, verifier, session, issued.refreshToken ?? ""] + flowCookies where !secret.isEmpty {
            secrets += [secret] + TokenLoggingTests.windows(of: secret)
        }
        #expect(secrets.count > 20)
        for secret in secrets {
            #expect(!stdout.contains(secret), "stdout contains a secret (\(secret.count) characters)")
            #expect(!stderr.contains(secret), "stderr contains a secret (\(secret.count) characters)")
        }
    }
}
