import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// A browser session's WebSocket tunnel and the session's life (docs/streams.md): a refresh the
/// gateway makes for the session moves the tunnel's deadline with it; without one, the tunnel
/// ends with the session's access token; Glewlwyd's back-channel logout ends it.
@Suite(
    "Session streams: refresh, expiry, a real provider's logout", .serialized, .timeLimit(.minutes(3)),
    .awaitsCleanups)
struct SessionStreamTests {
    static let leeway = 4.0

    /// The WebSocket backend as route `live`, before the fixture's routes.
    static func liveRoute(
        _ backend: WebSocketPeers.Backend, closeAtExpiry: Bool = true
    ) -> (inout JSONObject) -> Void {
        { document in
            if case .object(var backends)? = document["backends"] {
                backends["ws"] = ["urls": [.string(backend.url)]]
                document["backends"] = .object(backends)
            }
            if case .array(let routes)? = document["routes"] {
                document["routes"] = .array(
                    [
                        [
                            "name": "live", "pathPrefix": "/live/", "backend": "ws",
                            "streams": [
                                "leewaySeconds": .number(JSONNumber(Int(Self.leeway))),
                                "closeAtExpiry": .bool(closeAtExpiry),
                            ],
                        ]
                    ] + routes)
            }
        }
    }

    /// A tunnel opened through `fixture` with a browser session's access token that has about
    /// `remaining` seconds left (the clocks are moved: the token lives 60 s). On a loaded
    /// machine the open may come after the token expired, and be made with a refreshed one:
    /// that tunnel is ended by signing out, and a longer `remaining` is tried.
    struct SessionTunnel {
        var browser: ScriptedBrowser
        let tunnel: Task<JSONValue, Error>
        /// How long the token had left when the tunnel opened, and when that was.
        let remaining: Double
        let opened: ContinuousClock.Instant
        /// Sign-outs made for tries that came too late.
        let retries: Int
    }

    static func openTunnel(_ fixture: SignInFixture, _ backend: WebSocketPeers.Backend) async throws -> SessionTunnel {
        var retries = 0
        for remaining in [3.0, 8, 20] {
            var browser = ScriptedBrowser()
            _ = try await fixture.signIn(&browser, to: "/")
            fixture.gateway.clock.advance(by: 60 - remaining)
            let refreshes = fixture.provider.tokenCalls.refreshToken
            let cookie = try #require(browser.cookieHeader.first?.1)
            let opened = backend.opened.count
            let closed = backend.closed.count
            let port = fixture.gateway.port
            let start = ContinuousClock.now
            let tunnel = Task {
                try await WebSocketPeers.client(port: port, path: "/live/feed", cookie: cookie, timeout: 60)
            }
            try await poll { backend.opened.count == opened + 1 }
            if fixture.provider.tokenCalls.refreshToken == refreshes {
                return SessionTunnel(
                    browser: browser, tunnel: tunnel, remaining: remaining, opened: start, retries: retries)
            }
            // Opened only after a refresh: the token it was meant to test had expired already.
            _ = try await browser.send(
                fixture.gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
            _ = try await tunnel.value
            try await poll { backend.closed.count == closed + 1 }
            retries += 1
        }
        throw TestClientError.timeout
    }

    /// A refused session refresh ends the session (docs/browser-sign-in.md), and with it the
    /// session's tunnel. The route has no expiry deadline (`closeAtExpiry: false`), so nothing
    /// but the session's end can close the tunnel before the client's own timeout.
    @Test func aRefusedRefreshEndsTheSessionsTunnel() async throws {
        let backend = try await WebSocketPeers.backend()
        let fixture = try await SignInFixture.start(
            tokenLifetimeSeconds: 60, configure: Self.liveRoute(backend, closeAtExpiry: false))
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let cookie = try #require(browser.cookieHeader.first?.1)
        let port = fixture.gateway.port
        let tunnel = Task {
            try await WebSocketPeers.client(port: port, path: "/live/feed", cookie: cookie, timeout: 60)
        }
        try await poll { backend.opened.count == 1 }

        fixture.gateway.clock.advance(by: 61)
        fixture.provider.failTokenEndpoint(.error("invalid_grant", status: 400))
        var api = browser
        let refusedAt = Date().timeIntervalSince1970
        let refused = try await api.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
        #expect(refused.json?["type"] == "urn:auth-gateway:problem:token.refresh_rejected", "\(refused.text)")
        let report = try await tunnel.value
        #expect(report["code"]?.numberValue?.exactInt == 1008, "\(report)")
        let took = (report["at"]?.numberValue?.double ?? .infinity) - refusedAt
        #expect(took <= 10, "the tunnel closed \(took) s after the refused refresh")
        try await poll { backend.closed.count == 1 }
        #expect(backend.closed.first?["code"]?.numberValue?.exactInt == 1008)
        let metrics = try await fixture.metrics()
        #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"expiry\"} 1"), "\(metrics)")
    }

    @Test func aRefreshMovesTheTunnelsDeadlineAndWithoutOneTheTunnelEndsWithItsToken() async throws {
        let backend = try await WebSocketPeers.backend()
        let fixture = try await SignInFixture.start(tokenLifetimeSeconds: 60, configure: Self.liveRoute(backend))
        atTestEnd { await fixture.stop() }

        // Without a refresh: closed with 1008 at the token's expiry plus the leeway.
        let lapsed = try await Self.openTunnel(fixture, backend)
        let report = try await lapsed.tunnel.value
        #expect(report["code"]?.numberValue?.exactInt == 1008, "\(report)")
        #expect(report["reason"]?.stringValue == "credential expired")
        let closedBefore = lapsed.retries + 1
        try await poll { backend.closed.count == closedBefore }

        // With one: a request after the token's expiry (within the leeway) refreshes the
        // session, and the tunnel goes on past its first deadline.
        var session = try await Self.openTunnel(fixture, backend)
        fixture.gateway.clock.advance(by: session.remaining + 0.5)
        let refreshes = fixture.provider.tokenCalls.refreshToken
        let api = try await session.browser.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
        #expect(api.status == 200)
        #expect(fixture.provider.tokenCalls.refreshToken == refreshes + 1, "the session was refreshed")
        // Its first deadline passes (real time: the timer runs on the loop's clock).
        try await Task.sleep(until: session.opened + .seconds(session.remaining + Self.leeway + 1.5))
        #expect(backend.closed.count == closedBefore + session.retries, "still open: \(backend.closed)")
        // It ends with the session.
        let signedOut = Date().timeIntervalSince1970
        _ = try await session.browser.send(
            fixture.gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
        let closed = try await session.tunnel.value
        #expect(closed["code"]?.numberValue?.exactInt == 1008 && closed["reason"]?.stringValue == "session ended")
        // At once, not at a deadline: the tunnel's next deadline is the refreshed token's, a minute
        // away on the real clock, so 10 s is bound enough on a loaded machine.
        let took = (closed["at"]?.numberValue?.double ?? .infinity) - signedOut
        #expect(took <= 10, "the tunnel closed \(took) s after the sign-out")
        let metrics = try await fixture.metrics()
        #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"expiry\"} 1"), "\(metrics)")
        let signOuts = 1 + lapsed.retries + session.retries
        #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"sign_out\"} \(signOuts)"))
    }

    @Test func glewlwydsBackChannelLogoutClosesTheSessionsTunnelAndNoOther() async throws {
        let backend = try await WebSocketPeers.backend()
        let setup = try await GlewlwydSignInTests.start(configure: Self.liveRoute(backend))
        atTestEnd { await setup.stop() }
        var browser = ScriptedBrowser()
        var glewlwydBrowser = ScriptedBrowser()
        _ = try await GlewlwydSignInTests.signIn(setup, &browser, glewlwydBrowser: &glewlwydBrowser, to: "/")
        var other = ScriptedBrowser()
        var otherGlewlwyd = ScriptedBrowser()
        _ = try await GlewlwydSignInTests.signIn(setup, &other, glewlwydBrowser: &otherGlewlwyd, to: "/")
        let port = setup.gateway.port
        func open(_ browser: ScriptedBrowser, timeout: Double) async throws -> Task<JSONValue, Error> {
            let cookie = try #require(browser.cookieHeader.first?.1)
            let opened = backend.opened.count
            let tunnel = Task {
                try await WebSocketPeers.client(port: port, path: "/live/feed", cookie: cookie, timeout: timeout)
            }
            try await poll { backend.opened.count == opened + 1 }
            return tunnel
        }
        let tunnel = try await open(browser, timeout: 60)
        // The other one ends by itself (at its timeout), well after the logout was handled.
        let otherTunnel = try await open(other, timeout: 25)

        let sid = try #require(glewlwydBrowser.cookies[GlewlwydServer.sessionCookie])
        try await setup.glewlwyd.endSession(&glewlwydBrowser, sid: sid)
        // Glewlwyd posts the logout token from a thread of its own, when it gets to it.
        let report = try await tunnel.value
        #expect(report["code"]?.numberValue?.exactInt == 1008, "\(report); Glewlwyd's log: \(setup.glewlwyd.log)")
        #expect(report["reason"]?.stringValue == "session ended")
        try await poll { backend.closed.count == 1 }
        #expect(backend.closed.first?["code"]?.numberValue?.exactInt == 1008)
        let metrics = try await GlewlwydSignInTests.metrics(setup.gateway)
        #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"backchannel\"} 1"), "\(metrics)")
        #expect(metrics.contains("auth_gateway_open_streams{route=\"live\"} 1"), "the other tunnel goes on")
        // The other Glewlwyd session's tunnel was not closed by the gateway.
        let otherReport = try await otherTunnel.value
        #expect(
            otherReport["opened"] == .bool(true) && otherReport["code"] == nil, "no close frame came: \(otherReport)")
    }
}
