import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// A failed code exchange logs no secret (docs/browser-sign-in.md, "Errors and pages"): a real
/// `serve` process at `logging.level: debug` whose provider refuses the code, answers garbage
/// holding a token-shaped value, fails with a 5xx and drops the connection. Each callback gets
/// its documented answer, and neither the code, the `state`, the PKCE verifier, the flow cookie
/// nor anything the provider's answer held appears on standard output or standard error.
@Suite("Failed code exchanges log no secret (auth-gateway serve)", .timeLimit(.minutes(5)), .awaitsCleanups)
struct SignInFailureLoggingTests {
    @Test func noSecretOfAFailedExchangeIsLogged() async throws {
        let provider = try DemoAuthService(tokenLifetimeSeconds: 300)
        try await provider.start(group: TestGroup.shared)
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await backend.close()
            await provider.stop()
        }
        var document = SignInLoggingTests.configuration(
            backend: backend, provider: provider, base: "http://localhost:1")
        let process = try RunningGateway(configuration: document)
        defer { process.kill() }
        let port = try await process.waitForPort()
        let gateway = GatewayAtPort(port: port)
        let base = "http://localhost:\(port)"
        provider.register(.gateway(publicBaseURL: base))
        document = SignInLoggingTests.configuration(backend: backend, provider: provider, base: base)
        try process.rewrite(document)
        process.signal(SIGHUP)
        let applied = await eventually {
            let start = try? await gateway.send(TestRequest(.GET, "/.gateway/sign-in"))
            return start?.header("location")?.contains(FormEncoding.encode(base + "/.gateway/callback")) == true
        }
        try #require(applied, "the reloaded public base never applied:\n\(process.output)")

        let marker = "eyJhbGciOiJSUzI1NiJ9.gw-leaked-marker-7f3a9c.c2lnbmF0dXJl"
        typealias Failure = DemoAuthService.TokenEndpointFailure
        let cases: [(Failure, Int)] = [
            (.error("invalid_grant"), 400),
            (.body(#"{"access_token": "\#(marker)", "id_token": 7}"#), 400),
            (.body("<p>\(marker)</p>", contentType: "text/html"), 400),
            (.status(503), 503),
            (.hangUp, 503),
        ]
        var secrets: [String] = []
        for (failure, status) in cases {
            var browser = ScriptedBrowser()
            let navigation = try await browser.navigate(gateway, "/reports")
            let authorize = try #require(navigation.header("location"))
            let state = try #require(FormDecoding.value("state", in: Substring(authorize.split(separator: "?")[1])))
            secrets += [state] + browser.cookies.filter { $0.key.hasPrefix("gateway-flow-") }.map(\.value)
            let callback = try #require(provider.signIn(authorizationURL: authorize, userName: "alice@example.com"))
            let path = String(callback[try #require(callback.range(of: "/.gateway/callback")).lowerBound...])
            secrets.append(try #require(provider.lastIssuedCode))
            provider.failTokenEndpoint(failure, times: 1)
            let answer = try await browser.get(gateway, path)
            #expect(answer.status == status, "\(failure): \(answer.text)")
            #expect(browser.cookies["gateway-session"] == nil)
            #expect(!answer.text.contains("gw-leaked-marker"))
            secrets.append(try #require(provider.lastCodeVerifier))
        }

        #expect(try await process.waitForOutput(timeout: .seconds(30)) { $0.contains("/.gateway/callback") })
        process.signal(SIGTERM)
        #expect(try await process.waitForExit(timeout: .seconds(30)) == 0)
        let stdout = process.standardOutput
        let stderr = process.standardError
        #expect(stdout.contains("\"path\":\"/.gateway/callback\""), "\(stdout)")
        #expect(stderr.contains(" debug "), "no debug line on stderr:\n\(stderr)")
        var all = ["gw-leaked-marker", marker]
        for secret in secrets where !secret.isEmpty { all += [secret] + TokenLoggingTests.windows(of: secret) }
        #expect(all.count > 20)
        for secret in all {
            #expect(!stdout.contains(secret), "stdout contains a secret (\(secret.count) characters)")
            #expect(!stderr.contains(secret), "stderr contains a secret (\(secret.count) characters)")
        }
    }
}
