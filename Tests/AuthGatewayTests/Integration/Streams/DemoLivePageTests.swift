import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// The demo's live page (docs/streams.md, "The demo"), with the demo's own configuration, auth
/// service and echo backend: signed in, the page's WebSocket (a real client, Python
/// `websockets`, with the page's session cookie) ticks through the gateway; signing out closes
/// it with 1008 at once.
@Suite("Demo live page (real sockets, Python websockets)", .awaitsCleanups, .timeLimit(.minutes(2)))
struct DemoLivePageTests {
    /// The demo's auth service, echo backend and gateway (with an admin listener), its
    /// configuration reloaded with the gateway's real port as the demo does; stopped when the
    /// test ends. `base`: the origin browsers use.
    static func startDemo() async throws -> (gateway: GatewayFixture, base: String, authService: DemoAuthService) {
        let authService = try DemoAuthService(tokenLifetimeSeconds: 300)
        try await authService.start(group: TestGroup.shared)
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await authService.stop(); await backend.close()
        }
        func demo(_ publicBaseURL: String?) throws -> JSONObject {
            let text = DemoRunner.configurationText(
                gatewayPort: 0, authService: authService, backend: backend, publicBaseURL: publicBaseURL)
            var document = try #require(try JSONValue(parsing: text).objectValue, "the demo configuration")
            document["admin"] = ["host": "127.0.0.1", "port": 0]
            return document
        }
        let initial = try demo(nil)
        let gateway = try await GatewayFixture.start(backend: backend) { config in config = initial }
        atTestEnd { await gateway.stop() }
        // As the demo does on port 0: the real port, in the configuration and at the provider.
        let base = DemoRunner.publicBaseURL(gatewayPort: gateway.port)
        authService.register(DemoRunner.gatewayClient(publicBaseURL: base))
        let reloaded = try demo(base)
        try gateway.reload { config in config = reloaded }
        return (gateway, base, authService)
    }

    @Test func theLivePagesTunnelClosesWith1008WhenTheUserSignsOut() async throws {
        let (gateway, base, authService) = try await Self.startDemo()
        let printed = DemoRunner.walkthrough(
            gateway: "http://127.0.0.1:\(gateway.port)", publicBaseURL: base, authService: authService.baseURL,
            lifetime: 300)
        #expect(printed.contains(base + DemoRunner.livePath))

        // Sign in from the live page.
        var browser = ScriptedBrowser()
        var start: TestResponse?
        let applied = await eventually {
            var fresh = ScriptedBrowser()
            guard let response = try? await fresh.navigate(gateway, DemoRunner.livePath),
                response.header("location")?.contains(FormEncoding.encode(base + "/.gateway/callback")) == true
            else { return false }
            (browser, start) = (fresh, response)
            return true
        }
        try #require(applied, "the reloaded public base applies")
        let authorize = try #require(start?.header("location"))
        let callback = try #require(authService.signIn(authorizationURL: authorize, userName: "alice@example.com"))
        let callbackPath = try #require(
            callback.range(of: "/.gateway/callback").map { String(callback[$0.lowerBound...]) })
        let signedIn = try await browser.get(gateway, callbackPath)
        #expect(signedIn.status == 302, "\(signedIn.text)")
        let page = try await browser.navigate(gateway, DemoRunner.livePath)
        #expect(page.status == 200)
        #expect(page.text.contains("new WebSocket(") && page.text.contains(DemoRunner.livePath + "socket"))

        // The page's tunnel, with its cookie.
        let cookie = try #require(browser.cookieHeader.first?.1)
        let port = gateway.port
        let tunnel = Task {
            try await WebSocketPeers.client(
                port: port, path: DemoRunner.livePath + "socket", cookie: cookie, timeout: 60)
        }
        let opened = await eventually {
            let metrics = try? await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
            return metrics?.contains("auth_gateway_open_streams{route=\"live\"} 1") == true
        }
        try #require(opened, "the tunnel opened")
        try await Task.sleep(for: .seconds(1.5))

        // Signing out (the page's link: a navigation from the page, same origin) closes it.
        let signedOut = Date().timeIntervalSince1970
        let out = try await browser.send(
            gateway, TestRequest(.GET, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
        #expect(out.status == 302)
        let report = try await tunnel.value
        #expect(report["opened"] == .bool(true), "\(report)")
        #expect(report["code"]?.numberValue?.exactInt == 1008, "\(report)")
        #expect(report["reason"]?.stringValue == "session ended")
        // "At once" (docs/streams.md): the sign-out ends the tunnel itself. Its only other ends are
        // the token's expiry (300 s) and the client's own timeout (60 s), so 10 s tells the two
        // apart without timing a Python client on a loaded 2-core machine (2.4 s seen in CI).
        let took = (report["at"]?.numberValue?.double ?? .infinity) - signedOut
        #expect(took <= 10, "the tunnel closed \(took) s after the sign-out")
        #expect((report["echoes"]?.numberValue?.exactInt ?? 0) > 0, "the backend's ticks and echoes came through")
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"sign_out\"} 1"), "\(metrics)")
    }
}
